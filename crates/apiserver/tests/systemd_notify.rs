//! systemd's `NOTIFY_SOCKET` leaves the environment and `READY=1` still reaches it (upstream
//! `SdNotify(true, "READY=1\n")` unsets the variable). One test in its own binary: it changes
//! the process environment, which no other test may touch meanwhile.

use std::os::unix::net::UnixDatagram;

use apiserver::server::systemd;

#[test]
fn notify_socket_is_taken_out_of_the_environment_and_ready_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let receiver = UnixDatagram::bind(&path).unwrap();
    // SAFETY: the only test of this binary; no other thread uses the environment.
    unsafe {
        std::env::set_var(systemd::NOTIFY_SOCKET, &path);
        systemd::take_notify_socket_from_env();
    }
    assert_eq!(std::env::var_os(systemd::NOTIFY_SOCKET), None);
    assert!(systemd::notify_ready().unwrap());
    let mut buf = [0u8; 64];
    let n = receiver.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"READY=1\n");
}
