//! Who a request comes from, as far as the network says: the peer's address, or, when the
//! peer is a trusted proxy, the address the configured header names. Anonymous callers are
//! told apart by it (`budget::Account`), so that one client cannot hold every anonymous
//! caller's share.

use std::net::IpAddr;

use actix_web::HttpRequest;

/// Where the client's address is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientsConfig {
    /// A header a trusted proxy puts the client's address in (`X-Forwarded-For`: its last
    /// entry, the one the proxy itself added). `None`: the peer is the client.
    pub address_header: Option<String>,
    /// The proxies whose `address_header` is believed; from any other peer it is ignored,
    /// so a client cannot name itself someone else.
    pub trusted_proxies: Vec<IpAddr>,
}

/// The client's address: the peer's, unless the peer is a trusted proxy that named the client
/// in `address_header`.
pub(crate) fn client_address(req: &HttpRequest, config: &ClientsConfig) -> Option<IpAddr> {
    let peer = req.peer_addr().map(|a| a.ip());
    let (Some(header), Some(proxy)) = (&config.address_header, peer) else {
        return peer;
    };
    if !config.trusted_proxies.contains(&proxy) {
        return peer;
    }
    forwarded(
        req.headers()
            .get_all(header.as_str())
            .filter_map(|v| v.to_str().ok()),
    )
    .or(peer)
}

/// The last address of a forwarding header (repeated or comma-separated): the one the
/// trusted proxy added.
fn forwarded<'a>(values: impl Iterator<Item = &'a str>) -> Option<IpAddr> {
    values
        .flat_map(|v| v.split(','))
        .last()
        .and_then(|last| last.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn config() -> ClientsConfig {
        ClientsConfig {
            address_header: Some("x-forwarded-for".into()),
            trusted_proxies: vec!["10.0.0.1".parse().expect("ip")],
        }
    }

    fn from(peer: &str, forwarded_for: &str) -> HttpRequest {
        TestRequest::default()
            .peer_addr(format!("{peer}:4000").parse().expect("addr"))
            .insert_header(("x-forwarded-for", forwarded_for))
            .to_http_request()
    }

    #[test]
    fn a_trusted_proxy_names_the_client_with_the_last_forwarded_address() {
        let req = from("10.0.0.1", "1.1.1.1, 192.0.2.7");
        assert_eq!(client_address(&req, &config()), "192.0.2.7".parse().ok());
    }

    #[test]
    fn the_header_from_any_other_peer_is_ignored() {
        let req = from("192.0.2.9", "192.0.2.7");
        assert_eq!(client_address(&req, &config()), "192.0.2.9".parse().ok());
    }

    #[test]
    fn without_a_configured_header_the_peer_is_the_client() {
        let req = from("10.0.0.1", "192.0.2.7");
        let none = ClientsConfig::default();
        assert_eq!(client_address(&req, &none), "10.0.0.1".parse().ok());
    }

    #[test]
    fn an_unreadable_forwarded_address_leaves_the_peer() {
        let req = from("10.0.0.1", "not-an-ip");
        assert_eq!(client_address(&req, &config()), "10.0.0.1".parse().ok());
    }
}
