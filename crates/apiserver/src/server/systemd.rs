//! systemd readiness notification (upstream `daemon.SdNotify(true, "READY=1\n")` in
//! `NonBlockingRunWithContext`).
//!
//! Upstream sends `READY=1` to `$NOTIFY_SOCKET` once the listener serves and the post-start
//! hooks are launched, and then unsets `NOTIFY_SOCKET` so nothing the process starts inherits
//! it. It sends nothing else (no `STOPPING=1`). Removing an environment variable while other
//! threads run is unsound in Rust (C code such as the resolver reads the environment without
//! Rust's lock), so a binary calls [`take_notify_socket_from_env`] first thing in `main`, while
//! it has one thread: the address is kept here and the variable is gone from then on. Without
//! that call, [`notify_ready`] reads the address from the environment and leaves it set.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;

/// The environment variable systemd passes the notification socket in.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// The address taken out of the environment, once taken.
static TAKEN: OnceLock<Option<OsString>> = OnceLock::new();

/// Moves `NOTIFY_SOCKET` out of the environment into this module (upstream unsets it after
/// `READY=1`). Later calls do nothing.
///
/// # Safety
///
/// No other thread may read or write the environment meanwhile: call it at the start of `main`,
/// before any runtime or thread is started.
pub unsafe fn take_notify_socket_from_env() {
    TAKEN.get_or_init(|| {
        let value = std::env::var_os(NOTIFY_SOCKET);
        if value.is_some() {
            // SAFETY: the caller guarantees that no other thread uses the environment.
            unsafe { std::env::remove_var(NOTIFY_SOCKET) };
        }
        value
    });
}

/// Sends `READY=1` to the notification socket. Returns whether there was one to send to
/// (without one, as without systemd, nothing is sent and that is no error).
pub fn notify_ready() -> std::io::Result<bool> {
    let address = match TAKEN.get() {
        Some(taken) => taken.clone(),
        None => std::env::var_os(NOTIFY_SOCKET),
    };
    match address {
        Some(address) if !address.is_empty() => {
            send(&address, b"READY=1\n")?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Sends one datagram to a path or, with a leading `@`, to an abstract socket name.
fn send(address: &OsStr, message: &[u8]) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    let bytes = address.as_bytes();
    #[cfg(target_os = "linux")]
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        socket.send_to_addr(message, &address)?;
        return Ok(());
    }
    socket.send_to(message, std::path::Path::new(OsStr::from_bytes(bytes)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_ready_to_a_socket_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let receiver = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), b"READY=1\n").unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sends_ready_to_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("apiserver-notify-test-{}", std::process::id());
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let receiver = UnixDatagram::bind_addr(&address).unwrap();
        send(OsStr::new(&format!("@{name}")), b"READY=1\n").unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }
}
