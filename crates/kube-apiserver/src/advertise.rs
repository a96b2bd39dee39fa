//! The advertise address (upstream `ServerRunOptions.DefaultAdvertiseAddress`): where the
//! rest of the cluster reaches this apiserver, listed in the `kubernetes` Service's endpoints.
//! `--advertise-address` when given; otherwise the bind address unless it is a wildcard or
//! loopback address, in which case the address of the host's default route (upstream
//! `ResolveBindAddress` and `ChooseHostInterface`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The address to advertise for `advertise` (`--advertise-address`) and `bind`
/// (`--bind-address`). A host without a default route has no address upstream would choose
/// (it refuses to start): the bind address is advertised then, with upstream's message logged.
pub fn advertise_address(advertise: Option<IpAddr>, bind: IpAddr) -> IpAddr {
    if let Some(ip) = advertise.filter(|ip| !ip.is_unspecified()) {
        return ip;
    }
    if !bind.is_unspecified() && !bind.is_loopback() {
        return bind;
    }
    match default_route_address(bind.is_ipv6()) {
        Some(ip) => ip,
        None => {
            let fallback = if bind.is_unspecified() {
                match bind {
                    IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                    IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                }
            } else {
                bind
            };
            tracing::warn!(
                "Unable to find suitable network address.error='no default routes found'. Try to set the AdvertiseAddress directly or provide a valid BindAddress to fix this. Advertising {fallback}"
            );
            fallback
        }
    }
}

/// The source address of the default route, of the bind address's family first (upstream
/// prefers IPv4 unless the bind address is IPv6). Connecting a UDP socket sends nothing; it
/// only makes the kernel pick the route and its source address.
fn default_route_address(prefer_ipv6: bool) -> Option<IpAddr> {
    let v4 = || routed("0.0.0.0:0", "203.0.113.1:9");
    let v6 = || routed("[::]:0", "[2001:db8::1]:9");
    if prefer_ipv6 {
        v6().or_else(v4)
    } else {
        v4().or_else(v6)
    }
}

fn routed(local: &str, remote: &str) -> Option<IpAddr> {
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(remote).ok()?;
    let ip = socket.local_addr().ok().map(|a: SocketAddr| a.ip())?;
    // Only a global unicast address is a host interface upstream would choose.
    (!ip.is_unspecified() && !ip.is_loopback() && !ip.is_multicast()).then_some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_or_specific_address_is_advertised_as_it_is() {
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(advertise_address(Some(ip), "0.0.0.0".parse().unwrap()), ip);
        let bind: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(advertise_address(None, bind), bind);
        assert_eq!(
            advertise_address(Some("0.0.0.0".parse().unwrap()), bind),
            bind
        );
    }

    #[test]
    fn a_loopback_or_wildcard_bind_advertises_a_routed_address() {
        // Whether the kernel has an IPv4 default route (destination 0), read independently.
        let has_default_route = std::fs::read_to_string("/proc/net/route")
            .map(|table| {
                table
                    .lines()
                    .skip(1)
                    .any(|line| line.split_whitespace().nth(1) == Some("00000000"))
            })
            .unwrap_or(false);
        for bind in ["127.0.0.1", "0.0.0.0"] {
            let ip = advertise_address(None, bind.parse().unwrap());
            assert!(!ip.is_unspecified(), "{bind}: {ip}");
            assert_eq!(ip.is_loopback(), !has_default_route, "{bind}: {ip}");
        }
    }
}
