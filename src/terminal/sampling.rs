//! A sampling request answered by the person at the terminal, when no `--sampling-command`
//! is given: they read the conversation the server sent and type the assistant's reply, which
//! goes back as a text `CreateMessageResult`. Esc refuses the request (sampling has no
//! "decline" answer: the caller reports it as such).

use std::sync::Arc;

use serde_json::{json, Value};

use super::ask::{Ask, Stop, TextQuestion};
use super::check::Invalid;
use super::display::clean;

/// The `model` of a typed reply: a person wrote it, and the server may want to know.
pub const TYPED_MODEL: &str = "human (typed in roundtrip)";

/// Shows the request in `params` (a `CreateMessageRequestParams`) and returns the person's
/// reply as a `CreateMessageResult`.
pub fn type_reply<A: Ask>(ask: &mut A, params: &Value) -> Result<Value, Stop> {
    ask.say(&conversation(params))?;
    let check = Arc::new(|typed: &str| {
        if typed.trim().is_empty() {
            Err(Invalid::Required)
        } else {
            Ok(())
        }
    });
    let reply = ask.text(&TextQuestion {
        label: "Your reply",
        help: "Sent as the assistant's message · Esc refuses the request",
        initial: "",
        check,
    })?;
    Ok(json!({
        "role": "assistant",
        "content": {"type": "text", "text": reply},
        "model": TYPED_MODEL,
        "stopReason": "endTurn",
    }))
}

/// The request as the person reads it: the system prompt, each message by role, the limit.
fn conversation(params: &Value) -> String {
    let mut text = String::from("The server asks for a model's reply; you write it.");
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        text.push_str(&format!("\n  system: {}", clean(system)));
    }
    let messages = params.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = message
            .get("content")
            .map_or_else(String::new, shown_content);
        text.push_str(&format!("\n  {}: {content}", clean(role)));
    }
    if let Some(max) = params.get("maxTokens").and_then(Value::as_u64) {
        text.push_str(&format!("\n  (at most {max} tokens)"));
    }
    if params.get("tools").is_some() {
        text.push_str("\n  The server offers tools; a typed reply answers in text.");
    }
    text
}

/// A content block, or an array of them: text as is, anything else by its kind.
fn shown_content(content: &Value) -> String {
    match content {
        Value::Array(blocks) => blocks
            .iter()
            .map(shown_content)
            .collect::<Vec<_>>()
            .join(" "),
        block => match block.get("type").and_then(Value::as_str) {
            Some("text") => clean(block.get("text").and_then(Value::as_str).unwrap_or("")).into(),
            Some(kind) => format!("[{}]", clean(kind)),
            None => "[?]".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::scripted::{Scripted, Step};

    fn request() -> Value {
        json!({"systemPrompt": "Be brief", "maxTokens": 10, "messages": [
            {"role": "user", "content": {"type": "text", "text": "Say hi"}},
            {"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}]})
    }

    #[test]
    fn the_conversation_is_shown_before_the_reply_is_asked() {
        let mut ask = Scripted::new(vec![Step::Type("Hi!")]);
        type_reply(&mut ask, &request()).expect("a reply");
        let shown = ask.lines().next().expect("a line");
        assert!(shown.contains("system: Be brief"), "{shown}");
        assert!(shown.contains("user: Say hi"));
        assert!(shown.contains("user: [image]"));
        assert!(shown.contains("(at most 10 tokens)"));
    }

    #[test]
    fn the_typed_text_is_the_assistant_message() {
        let mut ask = Scripted::new(vec![Step::Type("Hi!")]);
        let result = type_reply(&mut ask, &request()).expect("a reply");
        assert_eq!(
            result,
            json!({"role": "assistant", "content": {"type": "text", "text": "Hi!"},
                "model": TYPED_MODEL, "stopReason": "endTurn"})
        );
    }

    #[test]
    fn an_empty_reply_is_asked_again() {
        let mut ask = Scripted::new(vec![Step::Type(" "), Step::Type("ok")]);
        type_reply(&mut ask, &request()).expect("a reply");
        assert!(ask.saw("refused Your reply: an answer is required"));
    }

    #[test]
    fn esc_refuses_the_request() {
        let mut ask = Scripted::new(vec![Step::Esc]);
        let outcome = type_reply(&mut ask, &request());
        assert!(matches!(outcome, Err(Stop::Escaped)));
    }
}
