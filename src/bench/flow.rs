//! What the load driver sends and how it checks each answer: the request bodies of a single
//! `tools/call` and of the two rounds of a sealed MRTR flow, and the checks every response
//! must pass (HTTP status, JSON-RPC id, `resultType`, content text, `requestState`).
//!
//! Bodies are built from fixed prefixes and suffixes with only the id (and, in round 2, the
//! state) spliced in, so the driver spends its core on the network, not on serialising.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The protocol revision every request declares.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The demo tenant's two-round tool, the key it elicits under, the name the driver answers
/// with and the greeting that proves round 2 ran with that answer.
pub const MRTR_TOOL: &str = "greet";
pub const MRTR_KEY: &str = "user_name";
pub(crate) const MRTR_NAME: &str = "Ada";
pub const MRTR_GREETING: &str = "Hello, Ada!";

/// Why a response failed its checks. Counted by [`CheckError::kind`], never panicked on.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("transport: {0}")]
    Transport(String),
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("body is not a JSON-RPC response: {0}")]
    Body(String),
    #[error("JSON-RPC id {got} does not echo {want}")]
    Id { want: u64, got: String },
    #[error("JSON-RPC error {0}")]
    RpcError(String),
    #[error("resultType {got:?}, expected {want}")]
    ResultType {
        want: &'static str,
        got: Option<String>,
    },
    #[error("content text {got:?}, expected {want:?}")]
    Content { want: String, got: Option<String> },
    #[error("input-required result without a requestState or the {MRTR_KEY} request")]
    MissingState,
}

impl CheckError {
    /// The counter this error is reported under.
    pub fn kind(&self) -> &'static str {
        match self {
            CheckError::Transport(_) => "transport",
            CheckError::Status(_) => "status",
            CheckError::Body(_) => "body",
            CheckError::Id { .. } => "id",
            CheckError::RpcError(_) => "rpc_error",
            CheckError::ResultType { .. } => "result_type",
            CheckError::Content { .. } => "content",
            CheckError::MissingState => "missing_state",
        }
    }
}

/// The request bodies of one target, built once per driver run.
#[derive(Debug, Clone)]
pub struct Bodies {
    /// `tools/call echo` after the id (every body begins with [`HEAD`] and the id).
    call: String,
    /// The echo text, which the result must carry back.
    pub text: String,
    round1: String,
    /// Round 2 after the id: up to the state, and after it.
    round2: (String, String),
}

/// Every body up to its id.
const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;

impl Bodies {
    pub fn new(text: &str) -> Bodies {
        let meta = format!(
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{PROTOCOL_VERSION}","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}}}}"#
        );
        let text_json = Value::String(text.to_owned()).to_string();
        Bodies {
            call: format!(
                r#","method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text_json}}},{meta}}}}}"#
            ),
            text: text.to_owned(),
            round1: format!(
                r#","method":"tools/call","params":{{"name":"{MRTR_TOOL}","arguments":{{}},{meta}}}}}"#
            ),
            round2: (
                format!(
                    r#","method":"tools/call","params":{{"name":"{MRTR_TOOL}","arguments":{{}},"inputResponses":{{"{MRTR_KEY}":{{"action":"accept","content":{{"name":"{MRTR_NAME}"}}}}}},"requestState":""#
                ),
                format!(r#"",{meta}}}}}"#),
            ),
        }
    }

    pub fn call(&self, id: u64) -> String {
        format!("{HEAD}{id}{}", self.call)
    }

    pub fn round1(&self, id: u64) -> String {
        format!("{HEAD}{id}{}", self.round1)
    }

    /// `state` is the token exactly as round 1 returned it (base64url: nothing to escape).
    pub fn round2(&self, id: u64, state: &str) -> String {
        let (b, c) = &self.round2;
        let mut out = String::with_capacity(HEAD.len() + b.len() + c.len() + state.len() + 20);
        out.push_str(HEAD);
        out.push_str(&id.to_string());
        out.push_str(b);
        out.push_str(&escape_json_str(state));
        out.push_str(c);
        out
    }
}

/// A token is opaque: escape it anyway, so a server returning quotes cannot break the body.
fn escape_json_str(s: &str) -> std::borrow::Cow<'_, str> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        return s.into();
    }
    let quoted = Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned().into()
}

/// A JSON-RPC response as the driver reads it: borrowed from the body, and only the fields it
/// checks. Everything else (a tool's schema, `_meta`) is skipped without being built, so the
/// driver spends its core on requests rather than on allocating what it never looks at.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<ResultView<'a>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The fields of a result the checks read. Each is kept raw, so a field of the wrong JSON type
/// fails its own check (and is reported under that check's kind), not the body parse.
#[derive(Deserialize)]
struct ResultView<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(rename = "inputRequests", borrow)]
    input_requests: Option<&'a RawValue>,
    #[serde(rename = "requestState", borrow)]
    request_state: Option<&'a RawValue>,
}

/// A JSON string, borrowed unless it has escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// `raw` as a string, or `None` for any other JSON type.
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Text<'_>>(raw?.get())
        .ok()
        .map(|t| t.0)
}

/// A content item, read only for its `text`.
#[derive(Deserialize)]
struct ContentItem<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

/// How strict the `resultType` check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultTypeCheck {
    /// Every result must carry the expected `resultType` (Roundtrip, any 2026-07-28 server).
    Required,
    /// A result without one passes; a wrong one still fails. For peers that do not stamp it.
    IfPresent,
    /// A result must carry none (a legacy session's).
    Absent,
}

/// The result of a JSON-RPC response to request `id`, after the status, framing and id checks.
fn result_of(status: u16, body: &[u8], id: u64) -> Result<ResultView<'_>, CheckError> {
    if status != 200 {
        return Err(CheckError::Status(status));
    }
    let response: Response<'_> =
        serde_json::from_slice(body).map_err(|e| CheckError::Body(e.to_string()))?;
    match response.id {
        Some(raw) if serde_json::from_str::<u64>(raw.get()).ok() == Some(id) => {}
        other => {
            return Err(CheckError::Id {
                want: id,
                got: other.map_or_else(|| "none".to_owned(), |v| v.get().to_owned()),
            })
        }
    }
    if let Some(error) = response.error {
        return Err(CheckError::RpcError(error.get().to_owned()));
    }
    response
        .result
        .ok_or_else(|| CheckError::Body("neither result nor error".to_owned()))
}

fn check_result_type(
    result: &ResultView<'_>,
    want: &'static str,
    check: ResultTypeCheck,
) -> Result<(), CheckError> {
    let present = result.result_type.is_some();
    match string(result.result_type) {
        None if check == ResultTypeCheck::Absent && !present => Ok(()),
        got if check == ResultTypeCheck::Absent => Err(CheckError::ResultType {
            want: "none (legacy)",
            got: got.map(Cow::into_owned),
        }),
        Some(got) if got == want => Ok(()),
        None if check == ResultTypeCheck::IfPresent && !present => Ok(()),
        got => Err(CheckError::ResultType {
            want,
            got: got.map(Cow::into_owned),
        }),
    }
}

fn check_text(result: &ResultView<'_>, want: &str) -> Result<(), CheckError> {
    let got = result
        .content
        .and_then(|c| serde_json::from_str::<Vec<ContentItem<'_>>>(c.get()).ok())
        .and_then(|items| string(items.first()?.text));
    if got.as_deref() == Some(want) {
        Ok(())
    } else {
        Err(CheckError::Content {
            want: want.to_owned(),
            got: got.map(Cow::into_owned),
        })
    }
}

/// A complete result to request `id` whose first content item's text is `text`.
pub(crate) fn check_complete(
    status: u16,
    body: &[u8],
    id: u64,
    text: &str,
    check: ResultTypeCheck,
) -> Result<(), CheckError> {
    let result = result_of(status, body, id)?;
    check_result_type(&result, "complete", check)?;
    check_text(&result, text)
}

/// `inputRequests`, read only for its keys.
#[derive(Deserialize)]
struct Keys<'a>(#[serde(borrow)] BTreeMap<Cow<'a, str>, IgnoredAny>);

/// Round 1 of the MRTR flow: input-required, asking for [`MRTR_KEY`], with a sealed state.
/// Returns the state to carry into round 2.
pub(crate) fn check_round1(status: u16, body: &[u8], id: u64) -> Result<String, CheckError> {
    let result = result_of(status, body, id)?;
    check_result_type(&result, "input_required", ResultTypeCheck::Required)?;
    let asks = result
        .input_requests
        .and_then(|r| serde_json::from_str::<Keys<'_>>(r.get()).ok())
        .is_some_and(|keys| keys.0.contains_key(MRTR_KEY));
    match string(result.request_state) {
        Some(state) if asks && !state.is_empty() => Ok(state.into_owned()),
        _ => Err(CheckError::MissingState),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_result_must_carry_no_result_type() {
        let body = |extra: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"result":{{{extra}"content":[{{"type":"text","text":"{MRTR_GREETING}"}}]}}}}"#
            )
        };
        let check = |b: String| {
            check_complete(200, b.as_bytes(), 3, MRTR_GREETING, ResultTypeCheck::Absent)
        };
        assert!(check(body("")).is_ok());
        assert!(matches!(
            check(body(r#""resultType":"complete","#)),
            Err(CheckError::ResultType { .. })
        ));
    }

    #[test]
    fn bodies_are_the_json_they_claim_to_be() {
        let b = Bodies::new("he said \"hi\"");
        let call: Value = serde_json::from_str(&b.call(7)).expect("call");
        assert_eq!(call["id"], 7);
        assert_eq!(call["params"]["arguments"]["text"], "he said \"hi\"");
        let r1: Value = serde_json::from_str(&b.round1(8)).expect("round 1");
        assert_eq!(r1["params"]["name"], MRTR_TOOL);
        let r2: Value = serde_json::from_str(&b.round2(9, "v1.k.abc")).expect("round 2");
        assert_eq!(r2["id"], 9);
        assert_eq!(r2["params"]["requestState"], "v1.k.abc");
        assert_eq!(
            r2["params"]["inputResponses"][MRTR_KEY]["content"]["name"],
            "Ada"
        );
        assert_eq!(
            r2["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            PROTOCOL_VERSION
        );
    }

    #[test]
    fn a_wrong_id_or_text_or_result_type_is_an_error_not_a_pass() {
        let ok = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}"#;
        assert!(check_complete(200, ok, 3, "hi", ResultTypeCheck::Required).is_ok());
        let e = check_complete(200, ok, 4, "hi", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("id"));
        let e = check_complete(200, ok, 3, "ho", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("content"));
        let e = check_complete(500, ok, 3, "hi", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("status"));
        let bare =
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        let e = check_complete(200, bare, 3, "hi", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("result_type"));
        assert!(check_complete(200, bare, 3, "hi", ResultTypeCheck::IfPresent).is_ok());
    }

    #[test]
    fn round_one_needs_a_state_and_the_elicitation() {
        let good = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"user_name":{}},"requestState":"v1.x.y"}}"#;
        assert_eq!(check_round1(200, good, 1).ok().as_deref(), Some("v1.x.y"));
        let stateless = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"user_name":{}}}}"#;
        assert_eq!(
            check_round1(200, stateless, 1).err().map(|e| e.kind()),
            Some("missing_state")
        );
    }

    #[test]
    fn only_the_first_content_item_is_checked_and_escaped_text_compares_unescaped() {
        let body = br#"{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","content":[{"type":"text","text":"he said \"hi\""},{"type":"image","data":"AAAA","mimeType":"image/png"}],"_meta":{"x":[1,{"y":null}]}}}"#;
        assert!(check_complete(200, body, 5, "he said \"hi\"", ResultTypeCheck::Required).is_ok());
        let e = check_complete(200, body, 5, "he said", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("content"));
    }

    #[test]
    fn a_field_of_the_wrong_type_fails_its_own_check() {
        let typed = br#"{"jsonrpc":"2.0","id":6,"result":{"resultType":7,"content":[{"type":"text","text":"hi"}]}}"#;
        let e = check_complete(200, typed, 6, "hi", ResultTypeCheck::IfPresent);
        assert_eq!(e.err().map(|e| e.kind()), Some("result_type"));
        let e = check_complete(200, typed, 6, "hi", ResultTypeCheck::Absent);
        assert_eq!(e.err().map(|e| e.kind()), Some("result_type"));
        let id = br#"{"jsonrpc":"2.0","id":"6","result":{"resultType":"complete","content":[]}}"#;
        let e = check_complete(200, id, 6, "hi", ResultTypeCheck::Required);
        assert_eq!(e.err().map(|e| e.kind()), Some("id"));
        let state = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"user_name":{}},"requestState":42}}"#;
        assert_eq!(
            check_round1(200, state, 1).err().map(|e| e.kind()),
            Some("missing_state")
        );
    }

    #[test]
    fn an_error_response_is_reported_with_its_error() {
        let body = br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}"#;
        let e = check_complete(200, body, 2, "hi", ResultTypeCheck::Required);
        assert!(matches!(e, Err(CheckError::RpcError(m)) if m.contains("-32602")));
    }
}
