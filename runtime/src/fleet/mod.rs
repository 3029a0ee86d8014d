//! A process's part in a fleet's legacy sessions ([`SessionFleet`]): the shared
//! [`SessionDirectory`] ([`directory`]), the fleet's caps on sessions, the URL the other
//! workers reach this one at, and the [`ForwardKey`] that lets an owner believe what a
//! forwarding worker says about the client.
//!
//! Below `legacy` and `dispatch`, which both hold it (the runtime config carries the
//! `SessionFleet`; sessions register in it), and above `budget` and `sealing` only.
//!
//! A forwarded request reaches the owner from the forwarding worker's address, not the
//! client's. Anonymous callers are told apart by their address (`budget::Account`), so the
//! forwarding worker names the client in a header the owner believes only when it carries a
//! MAC under a key every worker derives from the master key, bound to the session, the
//! request's method, the owner and a time within [`FORWARD_SKEW`]. A client that sends the
//! header itself cannot make the MAC.

pub mod directory;

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::sealing::{keyed_hmac, MasterKey};
use directory::{FleetCaps, SessionDirectory};

/// How often an owner renews its sessions' entries.
pub const RENEW_EVERY: Duration = Duration::from_secs(30);

/// How long an entry lives unrenewed: three renewals, so one missed renewal loses nothing.
pub const ENTRY_TTL: Duration = Duration::from_secs(90);

/// How far the time in a forward's client header may be from the owner's clock.
pub const FORWARD_SKEW: Duration = Duration::from_secs(30);

/// A process's part in a fleet's legacy sessions. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SessionFleet {
    directory: Arc<dyn SessionDirectory>,
    caps: FleetCaps,
    key: Arc<ForwardKey>,
    owner: Arc<OnceLock<String>>,
}

impl SessionFleet {
    /// Sessions registered in `directory` within `caps`, forwards vouched for with `key`;
    /// this process's URL is set later, with [`SessionFleet::set_owner`].
    pub fn new(
        directory: Arc<dyn SessionDirectory>,
        caps: FleetCaps,
        key: ForwardKey,
    ) -> SessionFleet {
        SessionFleet {
            directory,
            caps,
            key: Arc::new(key),
            owner: Arc::new(OnceLock::new()),
        }
    }

    /// The base URL the other workers reach this process at; the first one set stays.
    pub fn set_owner(&self, url: String) {
        let _ = self.owner.set(url);
    }

    /// This process's URL, once set.
    pub fn owner(&self) -> Option<&str> {
        self.owner.get().map(String::as_str)
    }

    /// The directory.
    pub fn directory(&self) -> &dyn SessionDirectory {
        self.directory.as_ref()
    }

    /// The fleet-wide caps on sessions.
    pub fn caps(&self) -> FleetCaps {
        self.caps
    }

    /// The key forwards are vouched for with.
    pub fn key(&self) -> &ForwardKey {
        &self.key
    }
}

type HmacSha256 = Hmac<Sha256>;

/// The fleet's key for vouching for a forwarded request's client address: HMAC-SHA256, the
/// same in every worker (derived from the master key), never sent.
pub struct ForwardKey {
    /// HMAC keyed with the secret, cloned for each MAC.
    keyed: HmacSha256,
}

impl std::fmt::Debug for ForwardKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForwardKey(..)")
    }
}

impl ForwardKey {
    /// The fleet's key, derived from the master key every worker of the fleet shares.
    pub fn derived_from(master: &MasterKey) -> ForwardKey {
        ForwardKey::new(&master.derive("legacy-forward"))
    }

    /// A key of these 32 secret bytes.
    pub fn new(secret: &[u8; 32]) -> ForwardKey {
        ForwardKey {
            keyed: keyed_hmac(secret),
        }
    }

    fn mac(&self, to: &Forward<'_>, client: &str, at: u64) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        // No part holds a line break (ids, methods, URLs and addresses are header-safe
        // text), and the time is fixed-size at the end: the message reads one way only.
        for part in [to.session, to.method, to.owner, client] {
            mac.update(part.as_bytes());
            mac.update(b"\n");
        }
        mac.update(&at.to_be_bytes());
        mac
    }

    /// The header value naming `client` as the caller of the forward `to`:
    /// `<ip> <unix seconds> <MAC in hex>`.
    pub fn vouch(&self, to: &Forward<'_>, client: IpAddr) -> String {
        let at = unix_now();
        let client = client.to_string();
        let tag = self.mac(to, &client, at).finalize().into_bytes();
        format!("{client} {at} {}", hex::encode(tag))
    }

    /// The client `value` names for the forward `to`, if its MAC holds and its time is
    /// within [`FORWARD_SKEW`] of now; the compare is constant-time.
    pub fn believe(&self, to: &Forward<'_>, value: &str) -> Option<IpAddr> {
        let mut parts = value.split(' ');
        let (client, at, tag) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let at: u64 = at.parse().ok()?;
        if unix_now().abs_diff(at) > FORWARD_SKEW.as_secs() {
            return None;
        }
        let tag = hex::decode(tag).ok()?;
        self.mac(to, client, at).verify_slice(&tag).ok()?;
        client.parse().ok()
    }
}

/// What a forward's vouch is bound to: the session it names, its method, and the owner it
/// is sent to (as the directory names it).
#[derive(Debug, Clone, Copy)]
pub struct Forward<'a> {
    /// The `Mcp-Session-Id`.
    pub session: &'a str,
    /// The HTTP method.
    pub method: &'a str,
    /// The owner's base URL.
    pub owner: &'a str,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> ForwardKey {
        ForwardKey::new(&[byte; 32])
    }

    fn client() -> IpAddr {
        "192.0.2.7".parse().unwrap()
    }

    const OWNER: &str = "http://10.0.0.5:8080";

    fn post(session: &str) -> Forward<'_> {
        Forward {
            session,
            method: "POST",
            owner: OWNER,
        }
    }

    #[test]
    fn a_vouched_client_is_believed_for_its_session() {
        let value = key(1).vouch(&post("s1"), client());
        assert_eq!(key(1).believe(&post("s1"), &value), Some(client()));
    }

    #[test]
    fn a_client_vouched_for_under_another_key_is_not_believed() {
        let value = key(2).vouch(&post("s1"), client());
        assert_eq!(key(1).believe(&post("s1"), &value), None);
    }

    #[test]
    fn a_vouch_for_one_session_is_not_believed_for_another() {
        let value = key(1).vouch(&post("s1"), client());
        assert_eq!(key(1).believe(&post("s2"), &value), None);
    }

    #[test]
    fn a_vouch_for_one_method_or_owner_is_not_believed_for_another() {
        let value = key(1).vouch(&post("s1"), client());
        let delete = Forward {
            method: "DELETE",
            ..post("s1")
        };
        let elsewhere = Forward {
            owner: "http://10.0.0.6:8080",
            ..post("s1")
        };
        assert_eq!(key(1).believe(&delete, &value), None);
        assert_eq!(key(1).believe(&elsewhere, &value), None);
    }

    #[test]
    fn a_vouch_whose_address_was_changed_is_not_believed() {
        let value = key(1).vouch(&post("s1"), client());
        let forged = value.replacen("192.0.2.7", "192.0.2.8", 1);
        assert_eq!(key(1).believe(&post("s1"), &forged), None);
    }

    #[test]
    fn an_old_vouch_is_not_believed() {
        let k = key(1);
        let at = unix_now() - FORWARD_SKEW.as_secs() - 5;
        let tag = hex::encode(k.mac(&post("s1"), "192.0.2.7", at).finalize().into_bytes());
        assert_eq!(
            k.believe(&post("s1"), &format!("192.0.2.7 {at} {tag}")),
            None
        );
    }

    #[test]
    fn a_client_written_header_without_a_mac_is_not_believed() {
        assert_eq!(key(1).believe(&post("s1"), "192.0.2.7"), None);
        assert_eq!(key(1).believe(&post("s1"), "1"), None);
    }
}
