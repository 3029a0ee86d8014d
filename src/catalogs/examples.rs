//! The `examples` catalog: what a tenant's tools look like when written against the handler
//! API. `echo` is the benchmarks' reference call; the others show multi round-trip flows:
//! - `greet`: one elicitation;
//! - `notes_delete`: confirm-before-delete over three rounds, carrying the first answer
//!   forward in the request state, with the side effect only in the last round;
//! - `notes_summarize`: asks the client's LLM (sampling);
//! - `workspace://roots`: a resource read that asks for the client's roots.
//!
//! The notes live in memory, one store per catalog instance (so per tenant). Anyone holding
//! the tenant's key can write them, so the store is capped ([`MAX_NOTES`], [`MAX_NOTE_BYTES`],
//! [`MAX_NOTE_NAME_CHARS`]); a write over a cap is a tool error the model can read and act on,
//! not a protocol error.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use roundtrip_runtime::handler::{
    fn_tool, Arguments, Catalog, Context, InputRequired, Resource, ResourceDescriptor,
    ResourceOutcome, Tool, ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::input::InputRequest;
use roundtrip_runtime::protocol::result::{CallToolResult, ReadResourceResult, ResourceContents};
use roundtrip_runtime::protocol::ElicitAction;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub fn catalog() -> Catalog {
    let notes = Notes::default();
    Catalog::builder()
        .tool(fn_tool(
            ToolDescriptor::new(
                "echo",
                "Returns its text argument unchanged.",
                json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}}, "required": ["text"]}),
            ),
            |_ctx, args| async move { Ok(CallToolResult::text(args.str("text")?).into()) },
        ))
        .tool(fn_tool(ToolDescriptor::no_args("greet", "Asks the user's name, then greets them."), |ctx, _args| async move { greet(&ctx) }))
        .tool(Arc::new(NotesWrite(notes.clone())))
        .tool(Arc::new(NotesList(notes.clone())))
        .tool(Arc::new(NotesDelete(notes.clone())))
        .tool(Arc::new(NotesSummarize(notes)))
        .resource(Arc::new(WorkspaceRoots))
        .build()
}

/// `greet`'s two questions, each built once and serialised the first time it is sent: a
/// round 1 hands out a shared handle instead of building its form again (the build was a visible part of a sealed flow's
/// CPU, BENCHMARKS.md).
static ASK_NAME: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::elicit_form("What is your name?", name_schema()));
static ASK_NAME_AGAIN: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::elicit_form("Please enter a name.", name_schema()));

fn name_schema() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string", "title": "Your name"}}, "required": ["name"]})
}

fn greet(ctx: &Context) -> ToolOutcome {
    let Some(answer) = ctx.input_response("user_name") else {
        return InputRequired::new()
            .request("user_name", ASK_NAME.clone())
            .into();
    };
    match (answer.action(), answer.content_str("name")) {
        (Some(ElicitAction::Accept), Some(name)) => {
            CallToolResult::text(format!("Hello, {name}!")).into()
        }
        (Some(ElicitAction::Accept), None) => InputRequired::new()
            .request("user_name", ASK_NAME_AGAIN.clone())
            .into(),
        _ => CallToolResult::text("No greeting: the user declined to give a name.").into(),
    }
}

/// The most notes one tenant may keep.
pub const MAX_NOTES: usize = 100;
/// The longest note text, in bytes (16 KiB).
pub const MAX_NOTE_BYTES: usize = 16 * 1024;
/// The longest note name, in characters.
pub const MAX_NOTE_NAME_CHARS: usize = 128;

/// A tenant's notes.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<BTreeMap<String, String>>>);

/// Why `notes_write` refused a note: the message is the tool's error text.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum WriteRefused {
    #[error("Note names are limited to {MAX_NOTE_NAME_CHARS} characters; this one has {0}.")]
    NameTooLong(usize),
    #[error("Notes are limited to {MAX_NOTE_BYTES} bytes of text; this one has {0}.")]
    TextTooLong(usize),
    #[error(
        "This tenant already keeps {MAX_NOTES} notes, the most allowed: \
         delete one, or replace an existing note."
    )]
    TooManyNotes,
}

impl Notes {
    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<String, String>) -> T) -> T {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Creates or replaces `name`, within the caps. Replacing a note never counts against
    /// [`MAX_NOTES`]; the count is checked under the same lock as the insert.
    fn write(&self, name: &str, text: &str) -> Result<(), WriteRefused> {
        let name_chars = name.chars().count();
        if name_chars > MAX_NOTE_NAME_CHARS {
            return Err(WriteRefused::NameTooLong(name_chars));
        }
        if text.len() > MAX_NOTE_BYTES {
            return Err(WriteRefused::TextTooLong(text.len()));
        }
        self.with(|n| {
            if n.len() >= MAX_NOTES && !n.contains_key(name) {
                return Err(WriteRefused::TooManyNotes);
            }
            n.insert(name.to_owned(), text.to_owned());
            Ok(())
        })
    }
}

struct NotesWrite(Notes);

#[async_trait(?Send)]
impl Tool for NotesWrite {
    fn descriptor(&self) -> ToolDescriptor {
        ToolDescriptor::new(
            "notes_write",
            format!(
                "Creates or replaces a note (at most {MAX_NOTES} notes, {} KiB of text each, \
                 names up to {MAX_NOTE_NAME_CHARS} characters).",
                MAX_NOTE_BYTES / 1024
            ),
            json!({"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}}, "required": ["name", "text"]}),
        )
    }

    async fn call(&self, _ctx: Context, args: Arguments) -> ToolOutcome {
        let (name, text) = (args.str("name")?, args.str("text")?);
        match self.0.write(name, text) {
            Ok(()) => {
                CallToolResult::text(format!("Saved note '{name}' ({} bytes).", text.len())).into()
            }
            Err(refused) => CallToolResult::error(refused.to_string()).into(),
        }
    }
}

struct NotesList(Notes);

#[async_trait(?Send)]
impl Tool for NotesList {
    fn descriptor(&self) -> ToolDescriptor {
        ToolDescriptor::no_args("notes_list", "Lists the notes' names.")
    }

    async fn call(&self, _ctx: Context, _args: Arguments) -> ToolOutcome {
        let names: Vec<String> = self.0.with(|n| n.keys().cloned().collect());
        let mut result = CallToolResult::text(if names.is_empty() {
            "No notes.".to_owned()
        } else {
            names.join("\n")
        });
        result.structured_content = Some(json!({ "names": names }));
        result.into()
    }
}

/// Where a `notes_delete` flow stands, carried in the request state between rounds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
enum DeleteStep {
    /// Round 1 asked for confirmation and a reason.
    Confirming,
    /// Round 2 asked the user to type the name; the round-1 reason rides along, since a
    /// retry carries only the latest round's answers.
    Retyping { reason: String },
}

struct NotesDelete(Notes);

#[async_trait(?Send)]
impl Tool for NotesDelete {
    fn descriptor(&self) -> ToolDescriptor {
        ToolDescriptor::new(
            "notes_delete",
            "Deletes a note after the user confirms, gives a reason, and retypes its name.",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        )
        .with_annotations(json!({"destructiveHint": true}))
        // Replaying the last round must not delete a note re-created since.
        .single_use_state()
    }

    async fn call(&self, ctx: Context, args: Arguments) -> ToolOutcome {
        let name = args.str("name")?;
        let Some(size) = self.0.with(|n| n.get(name).map(String::len)) else {
            return CallToolResult::error(format!("No note named '{name}'.")).into();
        };
        match ctx.request_state_json::<DeleteStep>() {
            None => ask_confirmation(name, size),
            Some(DeleteStep::Confirming) => {
                let Some(answer) = ctx.input_response("confirm") else {
                    return ask_confirmation(name, size);
                };
                if answer.content_bool("confirm") != Some(true) {
                    return CallToolResult::text(format!("Kept note '{name}'.")).into();
                }
                let reason = answer
                    .content_str("reason")
                    .unwrap_or("no reason given")
                    .to_owned();
                ask_retype(name, reason)
            }
            Some(DeleteStep::Retyping { reason }) => {
                let Some(answer) = ctx.input_response("retype") else {
                    return ask_retype(name, reason);
                };
                match answer.content_str("name") {
                    Some(typed) if typed == name => {
                        self.0.with(|n| n.remove(name));
                        CallToolResult::text(format!("Deleted note '{name}'. Reason: {reason}"))
                            .into()
                    }
                    Some(_) => CallToolResult::error(format!(
                        "The name did not match; note '{name}' was kept."
                    ))
                    .into(),
                    None => CallToolResult::text(format!("Kept note '{name}'.")).into(),
                }
            }
        }
    }
}

fn ask_confirmation(name: &str, size: usize) -> ToolOutcome {
    InputRequired::new()
        .elicit(
            "confirm",
            format!("Delete note '{name}' ({size} bytes)? This cannot be undone."),
            json!({"type": "object", "properties": {
                "confirm": {"type": "boolean", "title": "Delete"},
                "reason": {"type": "string", "title": "Reason"}
            }, "required": ["confirm"]}),
        )
        .state_json(&DeleteStep::Confirming)?
        .into()
}

fn ask_retype(name: &str, reason: String) -> ToolOutcome {
    InputRequired::new()
        .elicit(
            "retype",
            format!("Type the note's name ('{name}') to confirm deletion."),
            json!({"type": "object", "properties": {"name": {"type": "string", "title": "Note name"}}, "required": ["name"]}),
        )
        .state_json(&DeleteStep::Retyping { reason })?
        .into()
}

struct NotesSummarize(Notes);

#[async_trait(?Send)]
impl Tool for NotesSummarize {
    fn descriptor(&self) -> ToolDescriptor {
        ToolDescriptor::new(
            "notes_summarize",
            "Summarizes a note with the client's language model (sampling).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        )
    }

    async fn call(&self, ctx: Context, args: Arguments) -> ToolOutcome {
        let name = args.str("name")?;
        let Some(text) = self.0.with(|n| n.get(name).cloned()) else {
            return CallToolResult::error(format!("No note named '{name}'.")).into();
        };
        match ctx.input_response("summary").and_then(|a| a.sampled_text()) {
            Some(summary) => CallToolResult::text(format!("Summary of '{name}': {summary}")).into(),
            None => InputRequired::new()
                .sample(
                    "summary",
                    json!({
                        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Summarize in one sentence:\n\n{text}")}}],
                        "systemPrompt": "You write one-sentence summaries.",
                        "maxTokens": 200
                    }),
                )
                .into(),
        }
    }
}

/// `workspace://roots`: the client's roots, read by asking the client for them.
struct WorkspaceRoots;

#[async_trait(?Send)]
impl Resource for WorkspaceRoots {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new("workspace://roots", "Workspace roots", "application/json")
            .with_description("The client's filesystem roots, as the client reports them.")
    }

    async fn read(&self, ctx: Context) -> ResourceOutcome {
        let Some(roots) = ctx.input_response("roots").and_then(|a| a.roots()) else {
            return InputRequired::new().list_roots("roots").into();
        };
        let listing: Vec<Value> = roots
            .iter()
            .filter_map(|r| Some(json!({ "uri": r.get("uri")?.as_str()?, "name": r.get("name").and_then(Value::as_str) })))
            .collect();
        let text = json!({ "roots": listing }).to_string();
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                "workspace://roots",
                "application/json",
                text,
            )],
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtrip_runtime::handler::Outcome;
    use roundtrip_runtime::tenancy::Tenant;

    fn tenant() -> Arc<Tenant> {
        Arc::new(Tenant::new("t", Catalog::builder().build()))
    }

    fn args(v: Value) -> Arguments {
        Arguments::new(v.as_object().cloned().unwrap_or_default())
    }

    #[actix_rt::test]
    async fn notes_delete_removes_the_note_only_in_the_third_round() {
        let notes = Notes::default();
        notes.with(|n| n.insert("a".into(), "text".into()));
        let tool = NotesDelete(notes.clone());
        let r1 = tool
            .call(
                Context::builder(tenant()).build(),
                args(json!({"name": "a"})),
            )
            .await
            .expect("ok");
        let Outcome::InputRequired(ir) = r1 else {
            panic!("round 1 should ask")
        };
        let ctx2 = Context::builder(tenant())
            .request_state(ir.handler_state().map(str::to_owned))
            .answer(
                "confirm",
                json!({"action": "accept", "content": {"confirm": true, "reason": "old"}}),
            )
            .build();
        let Outcome::InputRequired(ir2) = tool
            .call(ctx2, args(json!({"name": "a"})))
            .await
            .expect("ok")
        else {
            panic!("round 2 should ask")
        };
        assert!(
            notes.with(|n| n.contains_key("a")),
            "nothing deleted before the last round"
        );
        let ctx3 = Context::builder(tenant())
            .request_state(ir2.handler_state().map(str::to_owned))
            .answer(
                "retype",
                json!({"action": "accept", "content": {"name": "a"}}),
            )
            .build();
        let Outcome::Complete(done) = tool
            .call(ctx3, args(json!({"name": "a"})))
            .await
            .expect("ok")
        else {
            panic!("round 3 completes")
        };
        assert!(!done.is_error);
        assert!(
            format!("{:?}", done.content).contains("Reason: old"),
            "the round-1 answer is carried forward"
        );
        assert!(!notes.with(|n| n.contains_key("a")));
    }

    /// Calls a `notes_write` tool and returns its (complete) result.
    async fn call_write(tool: &dyn Tool, name: &str, text: &str) -> CallToolResult {
        let outcome = tool
            .call(
                Context::builder(tenant()).build(),
                args(json!({"name": name, "text": text})),
            )
            .await
            .expect("notes_write never fails at the protocol level");
        let Outcome::Complete(result) = outcome else {
            panic!("notes_write never asks for input")
        };
        result
    }

    async fn write(notes: &Notes, name: &str, text: &str) -> CallToolResult {
        call_write(&NotesWrite(notes.clone()), name, text).await
    }

    fn text_of(result: &CallToolResult) -> String {
        format!("{:?}", result.content)
    }

    #[actix_rt::test]
    async fn notes_write_saves_a_note_at_exactly_the_caps() {
        let notes = Notes::default();
        let name = "n".repeat(MAX_NOTE_NAME_CHARS);
        let text = "t".repeat(MAX_NOTE_BYTES);
        let result = write(&notes, &name, &text).await;
        assert!(!result.is_error, "{}", text_of(&result));
        assert_eq!(
            notes.with(|n| n.get(&name).map(String::len)),
            Some(MAX_NOTE_BYTES)
        );
    }

    #[actix_rt::test]
    async fn notes_write_refuses_a_name_over_128_characters_as_a_tool_error() {
        let notes = Notes::default();
        // Counted in characters, not bytes: 128 two-byte characters fit.
        assert!(
            !write(&notes, &"é".repeat(MAX_NOTE_NAME_CHARS), "x")
                .await
                .is_error
        );
        let result = write(&notes, &"n".repeat(MAX_NOTE_NAME_CHARS + 1), "x").await;
        assert!(result.is_error);
        assert!(text_of(&result).contains("Note names are limited to 128 characters"));
        assert_eq!(notes.with(|n| n.len()), 1, "the long name was not saved");
    }

    #[actix_rt::test]
    async fn notes_write_refuses_text_over_16_kib_as_a_tool_error() {
        let notes = Notes::default();
        let result = write(&notes, "big", &"t".repeat(MAX_NOTE_BYTES + 1)).await;
        assert!(result.is_error);
        assert!(text_of(&result).contains("limited to 16384 bytes"));
        assert!(notes.with(|n| n.is_empty()));
    }

    #[actix_rt::test]
    async fn notes_write_refuses_a_101st_note_but_still_replaces_existing_ones() {
        let notes = Notes::default();
        for i in 0..MAX_NOTES {
            assert_eq!(notes.write(&format!("note-{i}"), "x"), Ok(()));
        }
        let result = write(&notes, "one-too-many", "x").await;
        assert!(result.is_error);
        assert!(text_of(&result).contains("already keeps 100 notes"));
        assert!(!write(&notes, "note-0", "replaced").await.is_error);
        assert_eq!(notes.with(|n| n.len()), MAX_NOTES);
        assert_eq!(
            notes.with(|n| n.get("note-0").cloned()).as_deref(),
            Some("replaced")
        );
    }

    #[actix_rt::test]
    async fn each_catalog_instance_has_its_own_note_cap() {
        let (a, b) = (catalog(), catalog());
        let write_a = a.tool("notes_write").expect("listed").0.as_ref();
        let write_b = b.tool("notes_write").expect("listed").0.as_ref();
        for i in 0..MAX_NOTES {
            assert!(!call_write(write_a, &i.to_string(), "x").await.is_error);
        }
        assert!(call_write(write_a, "more", "x").await.is_error);
        assert!(!call_write(write_b, "more", "x").await.is_error);
    }

    #[actix_rt::test]
    async fn greet_declined_does_not_ask_again() {
        let ctx = Context::builder(tenant())
            .answer("user_name", json!({"action": "decline"}))
            .build();
        assert!(matches!(greet(&ctx), Ok(Outcome::Complete(_))));
    }
}
