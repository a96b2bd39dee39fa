//! `serverAddressByClientCIDRs` (upstream `discovery/addresses.go`): the address clients should
//! use, always `0.0.0.0/0 → <external address>`, plus one entry per configured CIDR rule that
//! contains the client's IP.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use http::HeaderMap;

use super::types::ServerAddressByClientCIDR;
use crate::request::ConnectionInfo;

/// A CIDR that failed to parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR address: {0}")]
pub struct InvalidCidr(pub String);

/// An IP network, e.g. `10.0.0.0/8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpCidr {
    network: IpAddr,
    prefix: u8,
}

impl IpCidr {
    /// Whether `ip` is inside the network (an IPv4-mapped IPv6 address counts as IPv4, as in Go).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                mask_v4(u32::from(ip), self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                mask_v6(u128::from(ip), self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

/// Keeps the first `prefix` bits (`prefix` ≤ 32).
fn mask_v4(bits: u32, prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix))
        .map_or(0, |mask| bits & mask)
}

/// Keeps the first `prefix` bits (`prefix` ≤ 128).
fn mask_v6(bits: u128, prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix))
        .map_or(0, |mask| bits & mask)
}

impl FromStr for IpCidr {
    type Err = InvalidCidr;

    /// Parses like Go's `net.ParseCIDR`: the address is masked to its network.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidCidr(s.to_string());
        let (addr, prefix) = s.split_once('/').ok_or_else(invalid)?;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
        let network = match addr.parse::<IpAddr>().map_err(|_| invalid())? {
            IpAddr::V4(v4) if prefix <= 32 => IpAddr::V4(mask_v4(u32::from(v4), prefix).into()),
            IpAddr::V6(v6) if prefix <= 128 => IpAddr::V6(mask_v6(u128::from(v6), prefix).into()),
            _ => return Err(invalid()),
        };
        Ok(IpCidr { network, prefix })
    }
}

impl std::fmt::Display for IpCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// One rule: clients inside `cidr` use `address`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CidrRule {
    /// The client network.
    pub cidr: IpCidr,
    /// The address those clients should use.
    pub address: String,
}

/// The server's addresses as advertised in discovery (upstream `DefaultAddresses`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Addresses {
    /// The default (external) address, `host:port`.
    pub default_address: String,
    /// Extra per-network addresses.
    pub cidr_rules: Vec<CidrRule>,
}

impl Addresses {
    /// Only the default address.
    pub fn new(default_address: impl Into<String>) -> Self {
        Addresses {
            default_address: default_address.into(),
            cidr_rules: Vec::new(),
        }
    }

    /// The entries for a client at `client_ip`.
    pub fn server_address_by_client_cidrs(
        &self,
        client_ip: Option<IpAddr>,
    ) -> Vec<ServerAddressByClientCIDR> {
        let mut out = vec![ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".into(),
            server_address: self.default_address.clone(),
        }];
        if let Some(ip) = client_ip {
            out.extend(
                self.cidr_rules
                    .iter()
                    .filter(|rule| rule.cidr.contains(ip))
                    .map(|rule| ServerAddressByClientCIDR {
                        client_cidr: rule.cidr.to_string(),
                        server_address: rule.address.clone(),
                    }),
            );
        }
        out
    }
}

/// The client's IP as upstream's `utilnet.GetClientIP` finds it: the first valid entry of
/// `X-Forwarded-For`, else `X-Real-Ip`, else the connection's remote address.
pub fn client_ip(headers: &HeaderMap, connection: Option<&ConnectionInfo>) -> Option<IpAddr> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
    };
    let forwarded = header("x-forwarded-for").and_then(|forwarded| {
        forwarded
            .split(',')
            .find_map(|part| part.trim().parse::<IpAddr>().ok())
    });
    if forwarded.is_some() {
        return forwarded;
    }
    if let Some(ip) = header("x-real-ip").and_then(|v| v.parse::<IpAddr>().ok()) {
        return Some(ip);
    }
    connection
        .and_then(|c| c.remote_addr)
        .map(|addr: SocketAddr| addr.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Upstream `TestGetServerAddressByClientCIDRs`.
    #[test]
    fn server_address_by_client_cidrs() {
        let addresses = Addresses {
            default_address: "ExternalAddress".into(),
            cidr_rules: vec![CidrRule {
                cidr: "10.0.0.0/24".parse().unwrap(),
                address: "serviceIP".into(),
            }],
        };
        let default = ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".into(),
            server_address: "ExternalAddress".into(),
        };
        let internal = ServerAddressByClientCIDR {
            client_cidr: "10.0.0.0/24".into(),
            server_address: "serviceIP".into(),
        };
        let table: [(Option<&str>, Vec<ServerAddressByClientCIDR>); 4] = [
            (None, vec![default.clone()]),
            (Some("10.0.0.1"), vec![default.clone(), internal.clone()]),
            (Some("10.0.1.1"), vec![default.clone()]),
            (Some("::ffff:10.0.0.7"), vec![default.clone(), internal]),
        ];
        for (ip, want) in table {
            let ip = ip.map(|s| s.parse().unwrap());
            assert_eq!(addresses.server_address_by_client_cidrs(ip), want, "{ip:?}");
        }
    }

    #[test]
    fn cidr_parsing_masks_and_rejects() {
        assert_eq!(
            "10.1.2.3/8".parse::<IpCidr>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!(
            "0.0.0.0/0".parse::<IpCidr>().unwrap().to_string(),
            "0.0.0.0/0"
        );
        assert!(
            "0.0.0.0/0"
                .parse::<IpCidr>()
                .unwrap()
                .contains("1.2.3.4".parse().unwrap())
        );
        assert_eq!(
            "fd00::1/8".parse::<IpCidr>().unwrap().to_string(),
            "fd00::/8"
        );
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "10.0.0.0/+8", "::/129"] {
            assert!(bad.parse::<IpCidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn client_ip_sources() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "bogus, 1.2.3.4".parse().unwrap());
        headers.insert("x-real-ip", "5.6.7.8".parse().unwrap());
        assert_eq!(client_ip(&headers, None), Some("1.2.3.4".parse().unwrap()));
        headers.remove("x-forwarded-for");
        assert_eq!(client_ip(&headers, None), Some("5.6.7.8".parse().unwrap()));
        let conn = ConnectionInfo {
            remote_addr: Some("9.9.9.9:1234".parse().unwrap()),
            ..ConnectionInfo::local()
        };
        assert_eq!(
            client_ip(&HeaderMap::new(), Some(&conn)),
            Some("9.9.9.9".parse().unwrap())
        );
    }
}
