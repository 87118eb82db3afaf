//! The SSRF guard: which URLs may be fetched and which addresses may be connected to.
//!
//! A fetch tool run on a developer's machine or a server must not become a way to reach
//! the machine itself, its private network or a cloud metadata service. So every hop is
//! checked here before any connection: the scheme must be http or https, the host is
//! resolved by us, and every address it resolves to must be public. The fetch then
//! connects only to the addresses checked here (see `fetch.rs`), so a second DNS answer
//! (rebinding) cannot slip a private address in between check and connect.
//!
//! `Ipv4Addr::is_global` is unstable, and the stable helpers miss several ranges (CGNAT,
//! benchmarking, IPv4 embedded in IPv6), hence the explicit tables below.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;

use url::{Host, Url};

use super::deadline::Deadline;
use super::error::BrowseError;

/// ureq keeps at most this many resolved addresses; checking more would be wasted work.
pub(super) const MAX_CHECKED_ADDRESSES: usize = 16;

/// Reason given for the well-known addresses of cloud instance metadata services, which
/// hand out credentials and are the classic SSRF target.
const CLOUD_METADATA: &str = "cloud metadata service";

/// A host whose addresses passed the guard: the only addresses the fetch may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CheckedTarget {
    /// The host as the URL spells it, without IPv6 brackets, lowercase.
    pub(super) host: String,
    /// The port from the URL or the scheme's default.
    pub(super) port: u16,
    /// The resolved addresses, all checked, never empty.
    pub(super) addresses: Vec<SocketAddr>,
}

/// Checks one hop (the first URL or a redirect target): scheme, host, resolution, and every
/// resolved address. `allow_private_addresses` lifts the address refusals only.
pub(super) fn check_hop(
    url: &Url,
    allow_private_addresses: bool,
    deadline: &Deadline,
) -> Result<CheckedTarget, BrowseError> {
    check_scheme(url)?;
    let host = url.host().ok_or_else(|| BrowseError::InvalidUrl {
        url: super::error::quote_for_message(url.as_str()),
        reason: "the URL has no host".to_string(),
    })?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| BrowseError::InvalidUrl {
            url: super::error::quote_for_message(url.as_str()),
            reason: "the URL has no port and its scheme has no default".to_string(),
        })?;
    let host_name = host_without_brackets(&host);
    let addresses = match host {
        Host::Ipv4(address) => vec![SocketAddr::new(IpAddr::V4(address), port)],
        Host::Ipv6(address) => vec![SocketAddr::new(IpAddr::V6(address), port)],
        Host::Domain(domain) => resolve_host(domain, port, deadline)?,
    };
    if !allow_private_addresses {
        for address in &addresses {
            check_address(&host_name, address.ip())?;
        }
    }
    Ok(CheckedTarget {
        host: host_name,
        port,
        addresses,
    })
}

/// Refuses every scheme but http and https (file:, ftp:, gopher: and friends reach local
/// files or speak protocols that can be abused through a fetch).
pub(super) fn check_scheme(url: &Url) -> Result<(), BrowseError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(BrowseError::UnsupportedScheme {
            scheme: super::error::quote_for_message(other),
        }),
    }
}

/// Refuses `address` (reached through `host`) when it is not a public address.
pub(super) fn check_address(host: &str, address: IpAddr) -> Result<(), BrowseError> {
    match blocked_address_reason(address) {
        Some(reason) => Err(BrowseError::Refused {
            host: super::error::quote_for_message(host),
            address,
            reason,
        }),
        None => Ok(()),
    }
}

/// Why `address` must not be connected to, or `None` for a public address.
pub fn blocked_address_reason(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(address) => blocked_ipv4_reason(address),
        IpAddr::V6(address) => blocked_ipv6_reason(address),
    }
}

/// The IPv4 rules; the order matters where ranges nest (metadata inside link-local,
/// broadcast inside 240/4, unspecified inside 0/8).
fn blocked_ipv4_reason(address: Ipv4Addr) -> Option<&'static str> {
    let [first, second, third, fourth] = address.octets();
    let reason = match (first, second, third, fourth) {
        (0, 0, 0, 0) => "unspecified",
        (0, ..) => "current network (0.0.0.0/8)",
        (127, ..) => "loopback",
        (10, ..) => "private network",
        (172, 16..=31, ..) => "private network",
        (192, 168, ..) => "private network",
        // AWS, GCP and Azure answer on 169.254.169.254, AWS ECS task metadata on 169.254.170.2.
        (169, 254, 169, 254) | (169, 254, 170, 2) => CLOUD_METADATA,
        (169, 254, ..) => "link-local",
        // Alibaba Cloud's metadata service sits inside the CGNAT range.
        (100, 100, 100, 200) => CLOUD_METADATA,
        (100, 64..=127, ..) => "shared address space (CGNAT, 100.64.0.0/10)",
        (192, 0, 0, _) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "documentation range",
        (198, 18..=19, ..) => "benchmarking range (198.18.0.0/15)",
        (224..=239, ..) => "multicast",
        (255, 255, 255, 255) => "broadcast",
        (240..=255, ..) => "reserved (240.0.0.0/4)",
        _ => return None,
    };
    Some(reason)
}

/// The IPv6 rules. Addresses that embed an IPv4 address (mapped, compatible, NAT64 and
/// 6to4) are judged by the embedded address, since that is where packets end up.
fn blocked_ipv6_reason(address: Ipv6Addr) -> Option<&'static str> {
    if address.is_unspecified() {
        return Some("unspecified");
    }
    if address.is_loopback() {
        return Some("loopback");
    }
    if let Some(embedded) = embedded_ipv4(address) {
        return blocked_ipv4_reason(embedded);
    }
    let segments = address.segments();
    let reason = match segments {
        // AWS's IPv6 instance metadata endpoint, inside the unique-local range.
        [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] => CLOUD_METADATA,
        [0x0064, 0xff9b, 0x0001, ..] => "local-use NAT64 (64:ff9b:1::/48)",
        [0x0100, 0, 0, 0, ..] => "discard-only range (100::/64)",
        [0x2001, 0x0db8, ..] => "documentation range",
        [first, ..] if first & 0xfff0 == 0x3ff0 => "documentation range",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        _ => return None,
    };
    Some(reason)
}

/// The IPv4 address carried inside an IPv6 one, for the forms that deliver to it:
/// IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`
/// and 6to4 `2002:aabb:ccdd::`.
fn embedded_ipv4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let octets = address.octets();
    let low_ipv4 = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    match address.segments() {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => Some(low_ipv4),
        [0x0064, 0xff9b, 0, 0, 0, 0, ..] => Some(low_ipv4),
        [0x2002, ..] => Some(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5])),
        _ => None,
    }
}

/// The host as text without the brackets `url` keeps around IPv6 literals.
fn host_without_brackets(host: &Host<&str>) -> String {
    match host {
        Host::Domain(domain) => domain.to_ascii_lowercase(),
        Host::Ipv4(address) => address.to_string(),
        Host::Ipv6(address) => address.to_string(),
    }
}

/// Resolves `domain` with the system resolver within the deadline. The lookup runs on its
/// own thread because `getaddrinfo` cannot be interrupted; a lookup that outlives the
/// deadline is abandoned and its thread ends on its own.
fn resolve_host(
    domain: &str,
    port: u16,
    deadline: &Deadline,
) -> Result<Vec<SocketAddr>, BrowseError> {
    let remaining = deadline.remaining()?;
    let lookup_target = (domain.to_string(), port);
    let (sender, receiver) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("browse-resolve".to_string())
        .spawn(move || {
            let answer = lookup_target
                .to_socket_addrs()
                .map(|addresses| addresses.collect::<Vec<_>>());
            // The receiver is gone when the fetch already timed out: nothing to tell.
            let _ = sender.send(answer);
        })
        .map_err(|spawn_error| BrowseError::Resolve {
            host: super::error::quote_for_message(domain),
            message: format!("could not start the lookup: {spawn_error}"),
        })?;
    let answer = match remaining {
        Some(time_left) => receiver
            .recv_timeout(time_left)
            .map_err(|_| deadline.timeout_error())?,
        None => receiver.recv().map_err(|_| deadline.timeout_error())?,
    };
    let resolve_error = |message: String| BrowseError::Resolve {
        host: super::error::quote_for_message(domain),
        message,
    };
    let mut addresses = answer.map_err(|lookup_error| resolve_error(lookup_error.to_string()))?;
    addresses.dedup();
    addresses.truncate(MAX_CHECKED_ADDRESSES);
    if addresses.is_empty() {
        return Err(resolve_error("no addresses found".to_string()));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn reason_of(address: &str) -> Option<&'static str> {
        let parsed: IpAddr = address
            .parse()
            .unwrap_or_else(|_| panic!("bad test address {address}"));
        blocked_address_reason(parsed)
    }

    fn assert_blocked(address: &str, expected_reason: &str) {
        assert_eq!(
            reason_of(address),
            Some(expected_reason),
            "address {address}"
        );
    }

    fn assert_public(address: &str) {
        assert_eq!(reason_of(address), None, "address {address}");
    }

    #[test]
    fn ipv4_loopback_unspecified_and_current_network() {
        assert_blocked("127.0.0.1", "loopback");
        assert_blocked("127.255.255.254", "loopback");
        assert_blocked("0.0.0.0", "unspecified");
        assert_blocked("0.1.2.3", "current network (0.0.0.0/8)");
    }

    #[test]
    fn ipv4_private_networks() {
        for address in [
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
        ] {
            assert_blocked(address, "private network");
        }
        assert_public("172.15.255.255");
        assert_public("172.32.0.0");
        assert_public("192.169.0.1");
        assert_public("11.0.0.1");
    }

    #[test]
    fn ipv4_link_local_and_metadata() {
        assert_blocked("169.254.169.254", CLOUD_METADATA);
        assert_blocked("169.254.170.2", CLOUD_METADATA);
        assert_blocked("100.100.100.200", CLOUD_METADATA);
        assert_blocked("169.254.0.1", "link-local");
        assert_blocked("169.254.255.255", "link-local");
    }

    #[test]
    fn ipv4_cgnat_and_special_purpose() {
        assert_blocked("100.64.0.1", "shared address space (CGNAT, 100.64.0.0/10)");
        assert_blocked(
            "100.127.255.255",
            "shared address space (CGNAT, 100.64.0.0/10)",
        );
        assert_public("100.63.255.255");
        assert_public("100.128.0.0");
        assert_blocked("192.0.0.8", "IETF protocol assignments (192.0.0.0/24)");
        assert_blocked("198.18.0.1", "benchmarking range (198.18.0.0/15)");
        assert_blocked("198.19.255.255", "benchmarking range (198.18.0.0/15)");
        assert_public("198.20.0.1");
    }

    #[test]
    fn ipv4_documentation_ranges() {
        for address in ["192.0.2.1", "198.51.100.7", "203.0.113.255"] {
            assert_blocked(address, "documentation range");
        }
    }

    #[test]
    fn ipv4_multicast_broadcast_reserved() {
        assert_blocked("224.0.0.1", "multicast");
        assert_blocked("239.255.255.250", "multicast");
        assert_blocked("255.255.255.255", "broadcast");
        assert_blocked("240.0.0.1", "reserved (240.0.0.0/4)");
        assert_blocked("255.255.255.254", "reserved (240.0.0.0/4)");
    }

    #[test]
    fn ipv4_public_addresses_pass() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "223.255.255.255",
            "126.0.0.1",
        ] {
            assert_public(address);
        }
    }

    #[test]
    fn ipv6_special_addresses() {
        assert_blocked("::1", "loopback");
        assert_blocked("::", "unspecified");
        assert_blocked("ff02::1", "multicast");
        assert_blocked("ff0e::101", "multicast");
        assert_blocked("fc00::1", "unique local (fc00::/7)");
        assert_blocked("fdff:ffff::1", "unique local (fc00::/7)");
        assert_blocked("fd00:ec2::254", CLOUD_METADATA);
        assert_blocked("fe80::1", "link-local");
        assert_blocked("febf::1", "link-local");
        assert_blocked("fec0::1", "site-local (fec0::/10)");
        assert_blocked("2001:db8::1", "documentation range");
        assert_blocked("3fff::1", "documentation range");
        assert_blocked("100::1", "discard-only range (100::/64)");
        assert_blocked("64:ff9b:1::1", "local-use NAT64 (64:ff9b:1::/48)");
    }

    #[test]
    fn ipv6_embedded_ipv4_is_judged_by_ipv4_rules() {
        assert_blocked("::ffff:127.0.0.1", "loopback");
        assert_blocked("::ffff:169.254.169.254", CLOUD_METADATA);
        assert_blocked("::ffff:10.1.2.3", "private network");
        assert_blocked("::127.0.0.1", "loopback");
        assert_blocked("::192.168.0.1", "private network");
        assert_blocked("64:ff9b::127.0.0.1", "loopback");
        assert_blocked("2002:c0a8:0101::1", "private network");
        assert_public("::ffff:8.8.8.8");
        assert_public("64:ff9b::8.8.8.8");
    }

    #[test]
    fn ipv6_public_addresses_pass() {
        for address in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450::1",
        ] {
            assert_public(address);
        }
    }

    fn parse_url(text: &str) -> Url {
        Url::parse(text).unwrap_or_else(|error| panic!("bad test URL {text}: {error}"))
    }

    fn generous_deadline() -> Deadline {
        Deadline::starting_now(Duration::from_secs(10))
    }

    #[test]
    fn only_http_and_https_pass_the_scheme_check() {
        assert!(check_scheme(&parse_url("http://example.com/")).is_ok());
        assert!(check_scheme(&parse_url("https://example.com/")).is_ok());
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://example.com/",
        ] {
            assert!(matches!(
                check_hop(&parse_url(url), true, &generous_deadline()),
                Err(BrowseError::UnsupportedScheme { .. })
            ));
        }
    }

    #[test]
    fn ip_literal_hops_are_checked_without_dns() {
        let refused = check_hop(
            &parse_url("http://169.254.169.254/latest/meta-data/"),
            false,
            &generous_deadline(),
        );
        match refused {
            Err(BrowseError::Refused {
                host,
                address,
                reason,
            }) => {
                assert_eq!(host, "169.254.169.254");
                assert_eq!(address, IpAddr::from([169, 254, 169, 254]));
                assert_eq!(reason, CLOUD_METADATA);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // The URL parser turns the decimal, octal and hex spellings into an IPv4 host.
        for sneaky in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::ffff:7f00:1]/",
        ] {
            assert!(
                matches!(
                    check_hop(&parse_url(sneaky), false, &generous_deadline()),
                    Err(BrowseError::Refused {
                        reason: "loopback",
                        ..
                    })
                ),
                "{sneaky}"
            );
        }
    }

    #[test]
    fn localhost_is_resolved_and_refused() {
        let refused = check_hop(
            &parse_url("http://localhost:8080/"),
            false,
            &generous_deadline(),
        );
        assert!(matches!(
            refused,
            Err(BrowseError::Refused { ref host, reason: "loopback", .. }) if host == "localhost"
        ));
    }

    #[test]
    fn allowing_private_addresses_passes_loopback_with_checked_addresses() {
        let target = check_hop(
            &parse_url("http://127.0.0.1:9/x"),
            true,
            &generous_deadline(),
        );
        assert_eq!(
            target.ok(),
            Some(CheckedTarget {
                host: "127.0.0.1".to_string(),
                port: 9,
                addresses: vec![SocketAddr::from(([127, 0, 0, 1], 9))],
            })
        );
    }

    #[test]
    fn ipv6_literal_host_loses_its_brackets() {
        let target = check_hop(&parse_url("https://[::1]/"), true, &generous_deadline());
        assert_eq!(
            target.map(|checked| (checked.host, checked.port)).ok(),
            Some(("::1".to_string(), 443))
        );
    }

    #[test]
    fn spent_deadline_stops_resolution() {
        let spent = Deadline::starting_now(Duration::ZERO);
        assert!(matches!(
            check_hop(&parse_url("http://localhost/"), true, &spent),
            Err(BrowseError::Timeout { .. })
        ));
    }
}
