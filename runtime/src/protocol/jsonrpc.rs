//! JSON-RPC 2.0 framing: classify one incoming message and build outgoing ones.
//!
//! Classification is done by hand rather than by a serde enum so that every malformed shape
//! maps to the right code (-32600 for a non-request, -32602 is left to the method) and so the
//! request id, when there is one, is recovered for the error response. Only invalid JSON is
//! -32700: any well-formed body, whatever its shape, is read to the end and then classified.
//! The MCP members read as they are parsed are a modern `_meta`'s protocol version, when it
//! is one known here, and its client capabilities, into their compact form when they have
//! one (`capabilities`): neither costs a key, a string or a map entry then.

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::capabilities::{ClientCapabilities, ParsedCapabilities};
use super::error::McpError;
use super::key::Key;
use super::meta::{declares_version, has_modern_envelope, CLIENT_CAPABILITIES, PROTOCOL_VERSION};
use super::method::Method;
use super::other_json::other_json_is;
use super::version::{ParsedVersion, ProtocolVersion};

/// A JSON-RPC id: a string or a number. Null ids are not requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id; classification takes integers only, as MCP asks.
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s}"),
        }
    }
}

/// A request: it has an id and wants a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The id its response must carry.
    pub id: RequestId,
    /// The JSON-RPC method, e.g. `tools/call`, told apart as it was parsed.
    pub method: Method,
    /// `params`, when present, is always an object (checked at classification).
    pub params: Option<Map<String, Value>>,
    /// The client capabilities of a modern envelope (`params._meta` with a protocol version),
    /// when the parse read them as [`ClientCapabilities`] rather than as JSON (see
    /// `capabilities`): they are then here and not in `params._meta`. The envelope check
    /// takes them from either place.
    pub meta_capabilities: Option<ClientCapabilities>,
    /// The protocol version of a modern envelope, when it is one known here: the parse then
    /// reads it aside, and it is here and not in `params._meta`. The envelope check takes it
    /// from either place.
    pub meta_version: Option<ProtocolVersion>,
}

impl Request {
    /// What it targets, when its method has a target (`Method::target_key`) and `params`
    /// names it with a string: the tool or prompt name, or the resource URI.
    pub fn target(&self) -> Option<&str> {
        self.params
            .as_ref()?
            .get(self.method.target_key()?)?
            .as_str()
    }

    /// Whether it carries the modern envelope (a `_meta` protocol version, read aside or
    /// not): the one fact that sends it down the stateless path, whatever else it carries.
    pub fn is_modern(&self) -> bool {
        self.meta_version.is_some() || has_modern_envelope(self.params.as_ref())
    }
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The JSON-RPC method, e.g. `notifications/cancelled`.
    pub method: String,
    /// `params`, when present, is always an object (checked at classification).
    pub params: Option<Map<String, Value>>,
}

impl Notification {
    /// The request a `notifications/cancelled` withdraws.
    pub fn cancelled_request(&self) -> Option<RequestId> {
        if self.method != "notifications/cancelled" {
            return None;
        }
        let id = self.params.as_ref()?.get("requestId")?;
        serde_json::from_value(id.clone()).ok()
    }
}

/// A response the peer sends back to a request of ours (legacy server-to-client requests).
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of our request it answers.
    pub id: RequestId,
    /// Its `result`, or its `error` object.
    pub outcome: Result<Value, Value>,
}

/// One classified JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A method and an id: it gets a response.
    Request(Request),
    /// A method and no id: it gets none.
    Notification(Notification),
    /// An id and exactly one of `result` and `error`: a client's answer to a request of ours.
    Response(Response),
}

/// A message that could not be classified, with the id when one could be read.
#[derive(Debug, Clone)]
pub struct Malformed {
    /// The message's id, if one could be read: the error response answers it.
    pub id: Option<RequestId>,
    /// -32700 for invalid JSON, -32602 for a member of `params` or of `params._meta` given
    /// twice, otherwise -32600 (a batch, a non-object, a bad or repeated member).
    pub error: McpError,
}

impl Incoming {
    /// Parses one message body. Batches (arrays) are rejected: MCP does not allow them.
    ///
    /// The top-level object is read member by member into `Members` rather than into a map
    /// first: every request pays for this parse, and the map was built only to be taken apart.
    pub fn parse(body: &[u8]) -> Result<Incoming, Malformed> {
        // The body's UTF-8 is checked once, whole (a word at a time): read as text, serde_json
        // then takes each string as it is, where reading bytes it checked every string on its
        // own (BENCHMARKS.md, "2026-12-05 (day)"). A body that is not UTF-8 throughout is
        // read as bytes, as before: the parser's error (or the string it skips) is the same.
        let parsed = match std::str::from_utf8(body) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(body),
        };
        let body: Body = parsed.map_err(|e| Malformed {
            id: None,
            error: McpError::parse_error(e),
        })?;
        match body {
            Body::Object(members) => Self::classify(members),
            Body::Array => Err(not_a_message("Batch requests are not supported")),
            Body::Other => Err(not_a_message("A JSON-RPC message must be an object")),
        }
    }

    fn classify(members: Members) -> Result<Incoming, Malformed> {
        // A repeated `id` leaves no id to answer: which one would it be?
        let id = match members.id {
            None => None,
            Some(_) if members.repeated == Some(Member::Id) => None,
            Some(v) => Some(parse_id(v).map_err(|error| Malformed { id: None, error })?),
        };
        if let Some(member) = members.repeated {
            return Err(Malformed {
                id,
                error: McpError::invalid_request(format!("Duplicate member \"{}\"", member.name())),
            });
        }
        let bad = |id: &Option<RequestId>, msg: &'static str| Malformed {
            id: id.clone(),
            error: McpError::invalid_request(msg),
        };
        if !members.jsonrpc.is_some_and(|v| v.0) {
            return Err(bad(&id, "jsonrpc must be \"2.0\""));
        }
        match members.method {
            Some(MethodMember::Named(method)) => {
                let (params, aside) = match members.params {
                    None => (None, ReadAside::default()),
                    Some(Params::Object(p, aside)) => (Some(p), aside),
                    Some(Params::Repeated(member)) => {
                        return Err(Malformed {
                            id,
                            error: McpError::invalid_params(format!(
                                "Duplicate member \"{member}\" in params"
                            )),
                        })
                    }
                    Some(Params::Other) => return Err(bad(&id, "params must be an object")),
                };
                Ok(match id {
                    Some(id) => Incoming::Request(Request {
                        id,
                        method,
                        params,
                        meta_capabilities: aside.capabilities,
                        meta_version: aside.version,
                    }),
                    None => Incoming::Notification(Notification {
                        method: method.into_name(),
                        params: restore(params, aside),
                    }),
                })
            }
            Some(MethodMember::NotAString) => Err(bad(&id, "method must be a string")),
            None => {
                let Some(id) = id else {
                    return Err(bad(&None, "A message needs a method or an id"));
                };
                let outcome = match (members.result, members.error) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error @ Value::Object(_))) => Err(error),
                    _ => {
                        return Err(bad(
                            &Some(id),
                            "A response needs exactly one of result and error",
                        ))
                    }
                };
                Ok(Incoming::Response(Response { id, outcome }))
            }
        }
    }
}

/// A notification's params as sent: what was read aside goes back into its `_meta`.
fn restore(mut params: Option<Map<String, Value>>, aside: ReadAside) -> Option<Map<String, Value>> {
    let meta = params.as_mut().and_then(|p| p.get_mut("_meta"));
    if let Some(Value::Object(meta)) = meta {
        if let Some(capabilities) = aside.capabilities {
            put_back(meta, &capabilities);
        }
        if let Some(version) = aside.version {
            meta.insert(PROTOCOL_VERSION.to_owned(), Value::from(version.as_str()));
        }
    }
    params
}

/// Capabilities read aside, back into the `_meta` they were read from, as JSON.
fn put_back(meta: &mut Map<String, Value>, capabilities: &ClientCapabilities) {
    let declared = Value::Object(capabilities.to_map().into_owned());
    meta.insert(CLIENT_CAPABILITIES.to_owned(), declared);
}

fn not_a_message(why: &'static str) -> Malformed {
    Malformed {
        id: None,
        error: McpError::invalid_request(why),
    }
}

/// The scalar `visit_*` methods of a visitor to which every scalar (a boolean, a number,
/// null and, with `strings too`, a string) means the same value.
macro_rules! scalars_are {
    ($other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
    ($other:expr, strings too) => {
        scalars_are!($other);

        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

/// A body's top-level JSON value, as far as classification needs it.
enum Body {
    Object(Members),
    Array,
    Other,
}

/// The members of a message object that classification reads. A member given twice is
/// refused (`repeated` names the first one found): a proxy that reads the first of two
/// `method`s must not route a request we would run as the second.
#[derive(Default)]
struct Members {
    id: Option<Value>,
    jsonrpc: Option<JsonrpcVersion>,
    method: Option<MethodMember>,
    params: Option<Params>,
    result: Option<Value>,
    error: Option<Value>,
    repeated: Option<Member>,
}

/// `params` as classification reads it: an object whose members, and the members of its
/// `_meta`, are each given once (`Repeated` names the first repeated one, `_meta.` prefixed
/// for one in `_meta`), with what of its `_meta` was read aside, or anything else.
enum Params {
    Object(Map<String, Value>, ReadAside),
    Repeated(String),
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Id,
    Jsonrpc,
    Method,
    Params,
    Result,
    Error,
    #[serde(other)]
    Other,
}

impl Member {
    fn name(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Jsonrpc => "jsonrpc",
            Self::Method => "method",
            Self::Params => "params",
            Self::Result => "result",
            Self::Error => "error",
            Self::Other => "",
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BodyVisitor)
    }
}

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Body;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Body, A::Error> {
        let mut m = Members::default();
        while let Some(member) = map.next_key::<Member>()? {
            let repeated = &mut m.repeated;
            match member {
                Member::Id => read_member(&mut map, &mut m.id, member, repeated)?,
                Member::Jsonrpc => read_member(&mut map, &mut m.jsonrpc, member, repeated)?,
                Member::Method => read_member(&mut map, &mut m.method, member, repeated)?,
                Member::Params => read_member(&mut map, &mut m.params, member, repeated)?,
                Member::Result => read_member(&mut map, &mut m.result, member, repeated)?,
                Member::Error => read_member(&mut map, &mut m.error, member, repeated)?,
                // Parsed, not skipped: serde_json skips without its nesting limit, and a
                // body nested past that limit is a parse error wherever the nesting is.
                Member::Other => {
                    map.next_value::<Value>()?;
                }
            }
        }
        Ok(Body::Object(m))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Body::Array)
    }

    scalars_are!(Body::Other, strings too);
}

/// Reads the value of `member` into `slot`; a slot already filled makes `member` the
/// repeated one, unless another was found first.
fn read_member<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    member: Member,
    repeated: &mut Option<Member>,
) -> Result<(), A::Error> {
    if slot.replace(map.next_value()?).is_some() {
        repeated.get_or_insert(member);
    }
    Ok(())
}

/// `jsonrpc`, read without keeping it: whether it is exactly the string `"2.0"`. Any other
/// value is still read whole, as every member is (its nesting counts against the limit).
struct JsonrpcVersion(bool);

impl<'de> Deserialize<'de> for JsonrpcVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonrpcVersionVisitor)
    }
}

struct JsonrpcVersionVisitor;

impl<'de> Visitor<'de> for JsonrpcVersionVisitor {
    type Value = JsonrpcVersion;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("jsonrpc")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonrpcVersion, E> {
        Ok(JsonrpcVersion(v == "2.0"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonrpcVersion, A::Error> {
        while map.next_entry::<de::IgnoredAny, Value>()?.is_some() {}
        Ok(JsonrpcVersion(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsonrpcVersion, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(JsonrpcVersion(false))
    }

    scalars_are!(JsonrpcVersion(false));
}

/// `method`, read as a [`Method`] when it is a string: a known method's name is not kept.
/// Any other value is still read whole, as every member is (its nesting counts against the
/// limit).
enum MethodMember {
    Named(Method),
    NotAString,
}

impl<'de> Deserialize<'de> for MethodMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MethodMemberVisitor)
    }
}

struct MethodMemberVisitor;

impl<'de> Visitor<'de> for MethodMemberVisitor {
    type Value = MethodMember;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("method")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<MethodMember, E> {
        Ok(MethodMember::Named(Method::from(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<MethodMember, E> {
        Ok(MethodMember::Named(Method::from(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MethodMember, A::Error> {
        while map.next_entry::<de::IgnoredAny, Value>()?.is_some() {}
        Ok(MethodMember::NotAString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MethodMember, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(MethodMember::NotAString)
    }

    scalars_are!(MethodMember::NotAString);
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParamsVisitor)
    }
}

/// Reads `params`, noting the first member given twice in it or in its `_meta`. Anything
/// that is not an object is still read whole (its nesting counts against the parser's limit).
struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut params = Map::new();
        let mut repeated = None;
        let mut aside = ReadAside::default();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "_meta" {
                let meta = map.next_value::<Meta>()?;
                if let Some(inner) = meta.repeated {
                    repeated.get_or_insert_with(|| format!("_meta.{inner}"));
                }
                // A second `_meta` is refused below: what the first read aside is kept.
                aside.capabilities = aside.capabilities.or(meta.aside.capabilities);
                aside.version = aside.version.or(meta.aside.version);
                meta.value
            } else {
                map.next_value::<Value>()?
            };
            if let Some(key) = insert_new(&mut params, key, value) {
                repeated.get_or_insert(key);
            }
        }
        Ok(match repeated {
            Some(member) => Params::Repeated(member),
            None => Params::Object(params, aside),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Params::Other)
    }

    scalars_are!(Params::Other, strings too);
}

/// Inserts `key` unless it is already there; gives the key back if it was.
fn insert_new(map: &mut Map<String, Value>, key: String, value: Value) -> Option<String> {
    match map.entry(key) {
        serde_json::map::Entry::Vacant(slot) => {
            slot.insert(value);
            None
        }
        serde_json::map::Entry::Occupied(slot) => Some(slot.key().clone()),
    }
}

/// `params._meta` read as a value, with the first of its members given twice, if one is.
/// Its protocol version is read aside when it names a version known here, and a modern
/// envelope's client capabilities (one with a version) when they can be held as bits; what
/// was read aside is not in `value`.
struct Meta {
    value: Value,
    repeated: Option<String>,
    aside: ReadAside,
}

/// What the parse read aside from a modern `_meta` rather than keeping as JSON.
#[derive(Default)]
struct ReadAside {
    capabilities: Option<ClientCapabilities>,
    version: Option<ProtocolVersion>,
}

impl Meta {
    /// Anything but an object, kept as it is.
    fn other(value: Value) -> Meta {
        Meta {
            value,
            repeated: None,
            aside: ReadAside::default(),
        }
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = Meta;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
        let mut meta = Map::new();
        let mut repeated = None;
        let mut aside = ReadAside::default();
        while let Some(Key(key)) = map.next_key()? {
            let read = if key == PROTOCOL_VERSION {
                let read = map.next_value::<ParsedVersion>()?.0;
                read_aside(read, &mut aside.version, &key, &meta, &mut repeated)
            } else if key == CLIENT_CAPABILITIES {
                let read = map.next_value::<ParsedCapabilities>()?.bare();
                read_aside(read, &mut aside.capabilities, &key, &meta, &mut repeated)
            } else {
                Some(map.next_value::<Value>()?)
            };
            let Some(value) = read else {
                continue;
            };
            if let Some(key) = insert_new(&mut meta, key.into_owned(), value) {
                repeated.get_or_insert(key);
            }
        }
        // Only a modern envelope's capabilities are read by the envelope check; any other
        // request keeps its `_meta` as sent. (A version read aside is a modern envelope's.)
        if aside.version.is_none() && !declares_version(&meta) {
            if let Some(declared) = aside.capabilities.take() {
                put_back(&mut meta, &declared);
            }
        }
        Ok(Meta {
            value: Value::Object(meta),
            repeated,
            aside,
        })
    }

    // Not an object: kept as it is, for the envelope check to refuse (-32602).
    other_json_is!(Meta::other);
}

/// A member of `_meta` the parse reads aside: into `slot` when it could be read so (`Ok`);
/// otherwise its JSON, for `_meta`. Either way a member already read, aside or into `_meta`,
/// makes it `repeated`.
fn read_aside<T>(
    read: Result<T, Value>,
    slot: &mut Option<T>,
    key: &str,
    meta: &Map<String, Value>,
    repeated: &mut Option<String>,
) -> Option<Value> {
    if slot.is_some() || meta.contains_key(key) {
        repeated.get_or_insert_with(|| key.to_owned());
    }
    match read {
        Ok(aside) => {
            *slot = Some(aside);
            None
        }
        Err(json) => Some(json),
    }
}

fn parse_id(v: Value) -> Result<RequestId, McpError> {
    match v {
        Value::String(s) => Ok(RequestId::String(s)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(RequestId::Number(n)), // MCP: integer
        _ => Err(McpError::invalid_request("id must be a string or a number")),
    }
}

#[derive(Serialize)]
struct ResultMessage<'a, R: ?Sized> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a R,
}

#[derive(Serialize)]
struct ErrorMessage<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")] // MCP: `id?: RequestId`, never null
    id: Option<&'a RequestId>,
    error: Value,
}

#[derive(Serialize)]
struct NotificationMessage<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a Value,
}

/// What a success response is written into at first: `to_vec`'s 128 bytes are less than the
/// smallest stamped tool result (its `_meta` names the server), so nearly every response grew,
/// and was copied, once or twice.
pub(crate) const RESULT_CAPACITY: usize = 512;

/// Serialises a success response.
pub(crate) fn result_bytes<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> Vec<u8> {
    result_bytes_sized(RESULT_CAPACITY, id, result)
}

/// Serialises a success response into a buffer of `capacity` bytes at first, for a result
/// known to be larger than most (it still grows if need be).
pub(crate) fn result_bytes_sized<R: Serialize + ?Sized>(
    capacity: usize,
    id: &RequestId,
    result: &R,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    let message = ResultMessage {
        jsonrpc: "2.0",
        id,
        result,
    };
    match serde_json::to_writer(&mut out, &message) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// Whether `s` is written into JSON as it is: no `"`, no `\` and no control character. Every
/// byte is looked at, without an early exit, so that the loop can be vectorised.
pub(crate) fn needs_no_escape(s: &str) -> bool {
    s.bytes().fold(true, |plain, b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    })
}

/// Appends `"name":` and its value, JSON already written (in `parts`, in order), as the last
/// member of the result in `out`, a success response as [`result_bytes_sized`] writes it
/// (`…}}`). `name` must need no escape ([`needs_no_escape`]). Anything else in `out` (the
/// empty buffer of a failed serialisation) is left as it is.
pub(crate) fn append_result_member(out: &mut Vec<u8>, name: &str, parts: &[&str]) {
    debug_assert!(needs_no_escape(name));
    if !out.ends_with(b"}}") {
        return;
    }
    out.truncate(out.len() - 2);
    if !out.ends_with(b"{") {
        out.push(b',');
    }
    for part in ["\"", name, "\":"].iter().chain(parts).chain(&["}}"]) {
        out.extend_from_slice(part.as_bytes());
    }
}

/// Serialises an error response; `id` is left out only when the request's id was unreadable.
pub(crate) fn error_bytes(id: Option<&RequestId>, error: &McpError) -> Vec<u8> {
    serde_json::to_vec(&ErrorMessage {
        jsonrpc: "2.0",
        id,
        error: error.to_value(),
    })
    .unwrap_or_default()
}

/// Serialises a notification.
pub(crate) fn notification_bytes(method: &str, params: &Value) -> Vec<u8> {
    serde_json::to_vec(&NotificationMessage {
        jsonrpc: "2.0",
        method,
        params,
    })
    .unwrap_or_default()
}

/// Serialises a server-to-client request (legacy sessions only).
pub(crate) fn request_bytes(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    #[derive(Serialize)]
    struct RequestMessage<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: &'a Value,
    }
    serde_json::to_vec(&RequestMessage {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn err(body: &str) -> Malformed {
        Incoming::parse(body.as_bytes()).expect_err("should be malformed")
    }

    #[test]
    fn malformed_json_is_a_parse_error() {
        assert_eq!(err("{").error.code.code(), -32700);
    }

    #[test]
    fn invalid_utf8_in_a_string_is_a_parse_error() {
        let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#.to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        body.extend_from_slice(br#""}}"#);
        let Err(malformed) = Incoming::parse(&body) else {
            panic!("parsed invalid UTF-8")
        };
        assert_eq!(malformed.error.code.code(), -32700);
    }

    #[test]
    fn a_batch_is_an_invalid_request() {
        assert_eq!(err("[]").error.code.code(), -32600);
    }

    #[test]
    fn params_that_are_not_an_object_keep_the_id() {
        let m = err(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":[1]}"#);
        assert_eq!(m.error.code.code(), -32600);
        assert_eq!(m.id, Some(RequestId::Number(7.into())));
    }

    #[test]
    fn a_message_without_id_is_a_notification() {
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)
            .expect("valid");
        assert!(matches!(m, Incoming::Notification(_)));
    }

    #[test]
    fn a_result_is_a_response() {
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#).expect("valid");
        assert!(matches!(
            m,
            Incoming::Response(Response { outcome: Ok(_), .. })
        ));
    }

    #[test]
    fn a_body_that_is_not_an_object_or_array_is_an_invalid_request() {
        for body in ["1", "\"x\"", "true", "null", "1.5"] {
            let m = err(body);
            assert_eq!(m.error.code.code(), -32600, "{body}");
            assert_eq!(m.id, None);
        }
    }

    #[test]
    fn an_envelope_member_given_twice_is_an_invalid_request_naming_it() {
        for (body, member) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
                "method",
            ),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"a"}"#,
                "jsonrpc",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{},"params":{}}"#,
                "params",
            ),
        ] {
            let m = err(body);
            assert_eq!(m.error.code.code(), -32600, "{body}");
            assert_eq!(m.id, Some(RequestId::Number(1.into())), "{body}");
            assert!(m.error.message.contains(member), "{}", m.error.message);
        }
    }

    #[test]
    fn a_repeated_id_is_refused_without_an_id() {
        let m = err(r#"{"jsonrpc":"2.0","id":1,"method":"a","id":2}"#);
        assert_eq!((m.error.code.code(), m.id), (-32600, None));
    }

    #[test]
    fn a_member_given_twice_in_meta_is_invalid_params() {
        let m = err(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"a":1,"b":2,"a":3}}}"#,
        );
        assert_eq!(m.error.code.code(), -32602);
        assert_eq!(m.id, Some(RequestId::Number(3.into())));
        assert!(m.error.message.contains("_meta.a"), "{}", m.error.message);
    }

    fn request(body: &str) -> Request {
        match Incoming::parse(body.as_bytes()) {
            Ok(Incoming::Request(r)) => r,
            other => panic!("not a request: {other:?}"),
        }
    }

    #[test]
    fn a_requests_target_is_the_string_its_methods_target_key_names() {
        let target = |method: &str, params: &str| {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
            request(&body).target().map(str::to_owned)
        };
        assert_eq!(
            target("tools/call", r#"{"name":"echo"}"#).as_deref(),
            Some("echo")
        );
        assert_eq!(
            target("prompts/get", r#"{"name":"greet"}"#).as_deref(),
            Some("greet")
        );
        assert_eq!(
            target("resources/read", r#"{"uri":"a://b","name":"n"}"#).as_deref(),
            Some("a://b")
        );
        assert_eq!(target("tools/list", r#"{"name":"echo"}"#), None);
        assert_eq!(target("acme/custom", r#"{"name":"echo"}"#), None);
        assert_eq!(target("tools/call", r#"{"name":7}"#), None);
        assert_eq!(target("tools/call", "{}"), None);
    }

    #[test]
    fn a_known_method_is_read_as_its_kind_and_any_other_by_its_name() {
        let known = request(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#);
        assert_eq!(known.method, Method::ToolsCall);
        let other = request(r#"{"jsonrpc":"2.0","id":1,"method":"acme/x"}"#);
        assert_eq!(other.method, Method::Other("acme/x".into()));
    }

    #[test]
    fn an_escaped_method_name_is_read_as_the_name_it_spells() {
        let r = request(r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#);
        assert_eq!(r.method, Method::ToolsCall);
    }

    #[test]
    fn a_method_that_is_not_a_string_is_an_invalid_request_answered_by_its_id() {
        for method in [
            "1",
            "-1",
            "1.5",
            "null",
            "true",
            r#"["tools/call"]"#,
            r#"{"a":1}"#,
        ] {
            let m = err(&format!(r#"{{"jsonrpc":"2.0","id":4,"method":{method}}}"#));
            assert_eq!(m.error.code.code(), -32600, "{method}");
            assert_eq!(m.error.message, "method must be a string", "{method}");
            assert_eq!(m.id, Some(RequestId::Number(4.into())), "{method}");
        }
    }

    #[test]
    fn a_notification_keeps_its_method_name_whatever_it_is() {
        for method in ["notifications/initialized", "tools/call"] {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
            match Incoming::parse(body.as_bytes()) {
                Ok(Incoming::Notification(n)) => assert_eq!(n.method, method),
                other => panic!("not a notification: {other:?}"),
            }
        }
    }

    #[test]
    fn a_modern_envelopes_capabilities_declared_as_empty_objects_are_read_aside() {
        let r = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{}}}}}"#,
        );
        let caps = r.meta_capabilities.expect("read aside");
        assert!(caps.has("sampling") && caps.has("roots") && !caps.has("elicitation"));
        let meta = &r.params.expect("params")["_meta"];
        assert!(meta.get(CLIENT_CAPABILITIES).is_none(), "{meta}");
    }

    #[test]
    fn a_modern_envelopes_known_version_is_read_aside() {
        let r = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"acme/trace":"t-1"}}}"#,
        );
        assert_eq!(r.meta_version, Some(ProtocolVersion::V2026_07_28));
        assert!(r.is_modern());
        let meta = &r.params.as_ref().expect("params")["_meta"];
        assert_eq!(meta, &serde_json::json!({"acme/trace": "t-1"}));
    }

    #[test]
    fn an_unknown_version_stays_in_meta_for_the_envelope_check() {
        for version in [r#""2099-01-01""#, "20260728", r#"{"v":1}"#] {
            let r = request(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":{version},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
            ));
            assert!(r.meta_version.is_none(), "{version}");
            assert!(r.is_modern(), "{version}");
            let sent: Value = serde_json::from_str(version).expect("json");
            assert_eq!(r.params.expect("params")["_meta"][PROTOCOL_VERSION], sent);
        }
    }

    #[test]
    fn a_version_given_twice_in_meta_is_refused_however_each_was_read() {
        for twice in [
            r#""2026-07-28","X":"2026-07-28""#,
            r#""2026-07-28","X":"2099-01-01""#,
            r#""2099-01-01","X":"2026-07-28""#,
            r#""2099-01-01","X":"2099-01-01""#,
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"X":{twice}}}}}}}"#
            )
            .replace('X', PROTOCOL_VERSION);
            let m = err(&body);
            assert_eq!(m.error.code.code(), -32602, "{body}");
            assert!(
                m.error.message.contains(PROTOCOL_VERSION),
                "{}",
                m.error.message
            );
        }
    }

    #[test]
    fn a_request_without_a_meta_version_is_not_modern() {
        let r = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1}}}"#,
        );
        assert!(r.meta_version.is_none());
        assert!(!r.is_modern());
    }

    #[test]
    fn a_modern_envelopes_other_capabilities_stay_in_meta_for_the_envelope_check() {
        let r = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}}"#,
        );
        assert!(r.meta_capabilities.is_none());
        assert_eq!(
            r.params.expect("params")["_meta"][CLIENT_CAPABILITIES],
            serde_json::json!({"elicitation": {"url": {}}})
        );
    }

    #[test]
    fn capabilities_given_twice_in_meta_are_refused_however_each_was_read() {
        for twice in [
            r#"{},"X":{}"#,
            r#"{"roots":{}},"X":{"a":{"b":1}}"#,
            r#"{"a":{"b":1}},"X":{}"#,
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","X":{twice}}}}}}}"#
            )
            .replace('X', CLIENT_CAPABILITIES);
            let m = err(&body);
            assert_eq!(m.error.code.code(), -32602, "{body}");
            assert!(
                m.error.message.contains(CLIENT_CAPABILITIES),
                "{}",
                m.error.message
            );
        }
    }

    #[test]
    fn capabilities_without_a_protocol_version_stay_in_meta_as_sent() {
        let r = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{},"sampling":{}}}}}"#,
        );
        assert!(r.meta_capabilities.is_none());
        assert_eq!(
            r.params.expect("params")["_meta"][CLIENT_CAPABILITIES],
            serde_json::json!({"roots": {}, "sampling": {}})
        );
    }

    #[test]
    fn a_notifications_version_and_capabilities_stay_in_its_meta() {
        let m = Incoming::parse(
            br#"{"jsonrpc":"2.0","method":"n","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#,
        );
        let Ok(Incoming::Notification(n)) = m else {
            panic!("a notification")
        };
        assert_eq!(
            n.params.expect("params")["_meta"],
            serde_json::json!({
                PROTOCOL_VERSION: "2026-07-28",
                CLIENT_CAPABILITIES: {"elicitation": {}},
            })
        );
    }

    #[test]
    fn a_params_member_given_twice_is_invalid_params() {
        let m = err(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
        );
        assert_eq!(m.error.code.code(), -32602);
    }

    #[test]
    fn repeated_members_deeper_than_meta_are_left_to_the_method() {
        let m = Incoming::parse(
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"arguments":{"k":1,"k":2},"_meta":{"x":{"y":1,"y":2}}}}"#,
        )
        .expect("valid");
        assert!(matches!(m, Incoming::Request(_)));
    }

    #[test]
    fn a_meta_that_is_not_an_object_is_kept_for_the_envelope_check() {
        let m = Incoming::parse(
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[1,{"a":2}]}}"#,
        )
        .expect("valid");
        let Incoming::Request(r) = m else {
            panic!("a request")
        };
        assert_eq!(
            r.params.and_then(|p| p.get("_meta").cloned()),
            Some(serde_json::json!([1, {"a": 2}]))
        );
    }

    #[test]
    fn unknown_members_are_ignored() {
        let m = Incoming::parse(
            br#"{"x":{"y":[1,{"z":null}]},"jsonrpc":"2.0","id":"a","method":"m","params":{"k":1}}"#,
        )
        .expect("valid");
        let Incoming::Request(r) = m else {
            panic!("a request")
        };
        assert_eq!(r.params.and_then(|p| p.get("k").cloned()), Some(1.into()));
    }

    #[test]
    fn a_null_id_is_an_invalid_request() {
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)
                .error
                .code
                .code(),
            -32600
        );
    }

    #[test]
    fn nesting_past_the_parsers_limit_is_a_parse_error_even_in_an_unknown_member_or_a_batch() {
        let deep = format!(
            r#"{{"x":{}{},"jsonrpc":"2.0","id":1,"method":"m"}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(err(&deep).error.code.code(), -32700);
        let batch = format!("[{}{}]", "[".repeat(200), "]".repeat(200));
        assert_eq!(err(&batch).error.code.code(), -32700);
    }

    #[test]
    fn nesting_past_the_parsers_limit_in_the_method_is_a_parse_error() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(err(&deep).error.code.code(), -32700);
    }

    #[test]
    fn a_wrong_jsonrpc_version_is_invalid() {
        for version in [
            r#""1.0""#,
            r#""2.0 ""#,
            "2.0",
            "null",
            "true",
            r#"["2.0"]"#,
            r#"{"2.0":"2.0"}"#,
        ] {
            let m = err(&format!(r#"{{"jsonrpc":{version},"id":1,"method":"x"}}"#));
            assert_eq!(m.error.code.code(), -32600, "{version}");
            assert_eq!(m.id, Some(RequestId::Number(1.into())), "{version}");
        }
    }

    #[test]
    fn an_escaped_jsonrpc_version_is_the_same_string() {
        let body = br#"{"jsonrpc":"2\u002e0","id":1,"method":"x"}"#;
        assert!(matches!(Incoming::parse(body), Ok(Incoming::Request(_))));
    }

    #[test]
    fn only_quotes_backslashes_and_control_characters_need_escaping() {
        let plain = "v2.kid-_.AZaz09 ~/é\u{7f}";
        assert!(needs_no_escape(plain));
        assert!(needs_no_escape(&plain.repeat(40)));
        for escaped in ['"', '\\', '\n', '\u{0}', '\u{1f}'] {
            let long = format!("{}{escaped}{}", "a".repeat(70), "b".repeat(70));
            assert!(!needs_no_escape(&long), "{escaped:?}");
        }
    }

    #[test]
    fn a_member_appended_to_a_result_is_its_last_member() {
        let id = RequestId::Number(3.into());
        for (result, expected) in [
            (json!({}), json!({"s": "t"})),
            (json!({"a": {}}), json!({"a": {}, "s": "t"})),
        ] {
            let mut out = result_bytes(&id, &result);
            append_result_member(&mut out, "s", &["\"", "t", "\""]);
            let written: Value = serde_json::from_slice(&out).expect("json");
            assert_eq!(
                written,
                json!({"jsonrpc": "2.0", "id": 3, "result": expected})
            );
        }
    }

    #[test]
    fn nothing_is_appended_to_a_serialisation_that_failed() {
        let mut out = Vec::new();
        append_result_member(&mut out, "s", &["\"t\""]);
        assert!(out.is_empty());
    }
}
