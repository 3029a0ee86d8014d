//! What a sealed `requestState` is bound to, and the canonical digest of the arguments.
//!
//! The spec (MRTR, "requestState" security) asks that echoed state be usable only by the
//! principal it was issued to, only on the request it came from, and only for a short time.
//! Roundtrip binds each token to the tenant, the authenticated principal, the method, the
//! target (tool or prompt name, or resource URI) and a digest of the arguments.
//!
//! The binding goes into the AES-GCM **associated data**, not the plaintext. The server
//! recomputes it from the retry it is serving, so it never travels in the token, and a
//! mismatch fails the tag check itself: there is no "compare field by field" step to forget
//! or to get wrong, and a token replayed anywhere else is indistinguishable from a forged one.
//! The version and the kid are in the associated data too, so neither can be swapped.
//!
//! Every field is length-prefixed, so two different bindings never produce the same bytes
//! (tenant `ab` + principal `c` is not tenant `a` + principal `bc`).

use std::fmt;
use std::sync::LazyLock;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::codec::VERSION;

/// The request a token is bound to. Built by the caller from the request being served, both
/// when sealing and when opening.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The tenant slug.
    pub tenant: &'a str,
    /// The authenticated principal, as the runtime names it (an API key id, a subject).
    pub principal: &'a str,
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub target: &'a str,
    /// [`args_digest`] of the request's arguments.
    pub args_digest: ArgsDigest,
}

/// SHA-256 of the canonical JSON rendering of a request's arguments.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgsDigest([u8; 32]);

impl ArgsDigest {
    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for ArgsDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgsDigest({})", hex::encode(self.0))
    }
}

/// Digests `arguments` in a canonical form, so the same arguments digest the same on every
/// worker and every version, however the client ordered its keys.
///
/// The form: object keys sorted by their UTF-8 bytes at every depth, arrays in order, no
/// whitespace, strings and numbers exactly as `serde_json` writes them. Absent arguments and
/// JSON `null` are treated as `{}`, so all three digest the same.
///
/// The rendering is streamed into the hasher; nothing is copied. Objects whose keys already
/// iterate in order (always, unless `serde_json`'s `preserve_order` is on) need no sorting
/// at all. Recursion follows the value's depth, which `serde_json`'s parser caps at 128.
/// No arguments at all, the usual case of a tool that only asks, take the digest of `{}`
/// computed once per process.
#[must_use]
pub fn args_digest(args: Option<&Value>) -> ArgsDigest {
    match args {
        None | Some(Value::Null) => arguments_digest(&Map::new()),
        Some(Value::Object(map)) => arguments_digest(map),
        Some(value) => {
            let mut hasher = Sha256::new();
            write_canonical(&mut hasher, value);
            ArgsDigest(hasher.finalize().into())
        }
    }
}

/// [`args_digest`] of an `arguments` object.
#[must_use]
pub(crate) fn arguments_digest(arguments: &Map<String, Value>) -> ArgsDigest {
    static NO_ARGUMENTS: LazyLock<ArgsDigest> =
        LazyLock::new(|| ArgsDigest(Sha256::digest(b"{}").into()));
    if arguments.is_empty() {
        return *NO_ARGUMENTS;
    }
    let mut hasher = Sha256::new();
    write_object(&mut hasher, arguments);
    ArgsDigest(hasher.finalize().into())
}

fn write_canonical(h: &mut Sha256, value: &Value) {
    match value {
        Value::Array(items) => {
            h.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    h.update(b",");
                }
                write_canonical(h, item);
            }
            h.update(b"]");
        }
        Value::Object(map) => write_object(h, map),
        scalar => write_json(h, scalar),
    }
}

fn write_object(h: &mut Sha256, map: &Map<String, Value>) {
    h.update(b"{");
    if keys_ascending(map) {
        write_members(h, map.iter());
    } else {
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        write_members(h, members.into_iter());
    }
    h.update(b"}");
}

fn keys_ascending(map: &Map<String, Value>) -> bool {
    map.keys()
        .zip(map.keys().skip(1))
        .all(|(a, b)| a.as_bytes() < b.as_bytes())
}

fn write_members<'v>(h: &mut Sha256, members: impl Iterator<Item = (&'v String, &'v Value)>) {
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            h.update(b",");
        }
        write_json(h, key);
        h.update(b":");
        write_canonical(h, value);
    }
}

/// Writes a scalar or a key exactly as `serde_json` renders it.
fn write_json<T: serde::Serialize + ?Sized>(h: &mut Sha256, value: &T) {
    // serde_json fails only when the writer fails or a map has non-string keys. The writer is
    // a hasher, which cannot fail, and only strings, numbers, booleans and null come here.
    let _ = serde_json::to_writer(HashWriter(h), value);
}

struct HashWriter<'h>(&'h mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The AES-GCM associated data of a token: on the stack when it fits [`INLINE_AAD`] bytes,
/// which a usual binding does (about 110: 28 bytes of lengths, the version, a kid, a slug, a
/// key id, a method, a tool name and a 32-byte digest), so a seal or an open allocates
/// nothing for it.
pub(crate) enum AssociatedData {
    Inline { bytes: [u8; INLINE_AAD], len: usize },
    Heap(Vec<u8>),
}

/// The most associated data kept on the stack.
const INLINE_AAD: usize = 192;

impl std::ops::Deref for AssociatedData {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Inline { bytes, len } => &bytes[..*len],
            Self::Heap(bytes) => bytes,
        }
    }
}

/// The AES-GCM associated data for a token under `kid` bound to `b`: the version, the kid,
/// tenant, principal, method, target and argument digest, each as a u32 big-endian length
/// followed by its bytes.
pub(crate) fn associated_data(kid: &str, b: &Binding<'_>) -> AssociatedData {
    let fields: [&[u8]; 7] = [
        VERSION.as_bytes(),
        kid.as_bytes(),
        b.tenant.as_bytes(),
        b.principal.as_bytes(),
        b.method.as_bytes(),
        b.target.as_bytes(),
        b.args_digest.as_bytes(),
    ];
    let len = fields.iter().map(|f| 4 + f.len()).sum();
    if len > INLINE_AAD {
        let mut out = vec![0; len];
        write_fields(&mut out, &fields);
        return AssociatedData::Heap(out);
    }
    let mut bytes = [0; INLINE_AAD];
    write_fields(&mut bytes[..len], &fields);
    AssociatedData::Inline { bytes, len }
}

/// Writes each field as its length (u32 big-endian) and its bytes into `out`, which is
/// exactly as long as they are.
fn write_fields(out: &mut [u8], fields: &[&[u8]]) {
    let mut at = 0;
    for field in fields {
        // A field over 4 GiB cannot arrive: request bodies are capped far below that.
        let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        out[at + 4..at + 4 + field.len()].copy_from_slice(field);
        at += 4 + field.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest(v: Value) -> ArgsDigest {
        args_digest(Some(&v))
    }

    fn sha(bytes: &[u8]) -> ArgsDigest {
        ArgsDigest(Sha256::digest(bytes).into())
    }

    #[test]
    fn an_arguments_object_digests_as_the_same_object_given_as_a_value() {
        let arguments = json!({"b": [1, {"d": null, "c": "x"}], "a": 2.5});
        let map = arguments.as_object().expect("an object");
        assert_eq!(arguments_digest(map), digest(arguments.clone()));
        assert_eq!(arguments_digest(&Map::new()), args_digest(None));
    }

    fn binding<'a>(tenant: &'a str, principal: &'a str) -> Binding<'a> {
        Binding {
            tenant,
            principal,
            method: "tools/call",
            target: "echo",
            args_digest: args_digest(None),
        }
    }

    #[test]
    fn absent_null_and_empty_object_arguments_digest_the_same() {
        let empty = digest(json!({}));
        assert_eq!(args_digest(None), empty);
        assert_eq!(args_digest(Some(&Value::Null)), empty);
        assert_eq!(empty, sha(b"{}"));
    }

    #[test]
    fn key_order_is_irrelevant_at_every_depth() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[{"q":1,"p":2}],"x":null}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[{"p":2,"q":1}]},"b":1}"#).unwrap();
        assert_eq!(digest(a), digest(b));
    }

    #[test]
    fn unsorted_maps_are_sorted_by_utf8_bytes() {
        // Built by hand in reverse order so the sorting path runs even without preserve_order
        // (a BTreeMap sorts on insert; an IndexMap would keep this order).
        let mut map = Map::new();
        for k in ["é", "b", "B", "a"] {
            map.insert(k.to_owned(), json!(k));
        }
        assert_eq!(
            digest(Value::Object(map)),
            sha(r#"{"B":"B","a":"a","b":"b","é":"é"}"#.as_bytes())
        );
    }

    #[test]
    fn rendering_is_compact_json_as_serde_json_writes_it() {
        let v = json!({"s": "a\"b\\c\n\u{1}é", "n": [1, -2, 1.5, 1e300, true, null]});
        let expected = r#"{"n":[1,-2,1.5,1e+300,true,null],"s":"a\"b\\c\n\u0001é"}"#;
        assert_eq!(serde_json::to_string(&v).unwrap(), expected);
        assert_eq!(digest(v), sha(expected.as_bytes()));
    }

    #[test]
    fn different_values_digest_differently() {
        let base = digest(json!({"a": 1}));
        for other in [
            json!({"a": 2}),
            json!({"a": "1"}),
            json!({"a": 1.0}),
            json!({"b": 1}),
            json!({"a": 1, "b": null}),
            json!({"a": [1]}),
            json!([1]),
            json!("a"),
        ] {
            assert_ne!(digest(other.clone()), base, "{other}");
        }
    }

    #[test]
    fn arrays_are_order_sensitive() {
        assert_ne!(digest(json!({"a": [1, 2]})), digest(json!({"a": [2, 1]})));
    }

    #[test]
    fn debug_prints_the_digest_as_hex() {
        let shown = format!("{:?}", args_digest(None));
        // SHA-256("{}")
        assert_eq!(
            shown,
            "ArgsDigest(44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a)"
        );
    }

    #[test]
    fn associated_data_is_injective_across_a_field_boundary_shift() {
        assert_ne!(
            &*associated_data("k", &binding("ab", "c")),
            &*associated_data("k", &binding("a", "bc"))
        );
        assert_ne!(
            &*associated_data("k", &binding("", "x")),
            &*associated_data("k", &binding("x", ""))
        );
    }

    #[test]
    fn associated_data_covers_version_kid_and_every_field() {
        let b = binding("t", "p");
        let aad = associated_data("kid", &b);
        let expected_len = [2, 3, 1, 1, 10, 4, 32].iter().map(|n| 4 + n).sum::<usize>();
        assert_eq!(aad.len(), expected_len);
        assert_eq!(&aad[..6], b"\0\0\0\x02v2");
        assert_ne!(&*aad, &*associated_data("kie", &b));
        let mut other = b;
        other.args_digest = digest(json!({"a": 1}));
        assert_ne!(&*aad, &*associated_data("kid", &other));
    }

    #[test]
    fn associated_data_too_long_for_the_stack_has_the_same_layout() {
        let tenant = "t".repeat(300);
        let aad = associated_data("kid", &binding(&tenant, "p"));
        assert!(matches!(aad, AssociatedData::Heap(_)));
        let mut expected = Vec::new();
        for field in [
            &b"v2"[..],
            b"kid",
            tenant.as_bytes(),
            b"p",
            b"tools/call",
            b"echo",
            binding("t", "p").args_digest.as_bytes(),
        ] {
            expected.extend_from_slice(&(field.len() as u32).to_be_bytes());
            expected.extend_from_slice(field);
        }
        assert_eq!(&*aad, expected.as_slice());
    }
}
