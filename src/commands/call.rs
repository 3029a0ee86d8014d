//! `roundtrip call URL TOOL`, `roundtrip prompt URL NAME` and `roundtrip read URL URI`: the
//! terminal client. Each connects with `roundtrip-client` (era detection, headers, rounds) and
//! answers input requests from its answer sources (`crate::answers`): `--answer`s, a
//! `--sampling-command`, `--root`s, and the person at the terminal when stdin is one.
//!
//! Output goes to stdout: the result's text by default, the whole result as one line of JSON
//! with `--json`. Forms are drawn on stderr. Exit 1 when the call fails or a tool reports an
//! error, with the reason on stderr.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use roundtrip_client::protocol::results::{GetPromptResult, ReadResourceResult};
use roundtrip_client::{Client, ClientBuilder, EraChoice};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::answers::{AnswerSources, Answering, InputMethod, PresetAnswers, SamplingCommand};
use crate::cli::{AnswerArgs, CallArgs, ConnectArgs, EraArg, PromptArgs, ReadArgs};
use crate::terminal::Tty;

/// `roundtrip call`.
pub fn call(args: &CallArgs) -> ExitCode {
    let request = Request::Tool {
        name: &args.tool,
        arguments: args.args.clone().map_or(Value::Null, Value::Object),
    };
    run(&args.url, &args.connect, &args.answers, request)
}

/// `roundtrip prompt`.
pub fn prompt(args: &PromptArgs) -> ExitCode {
    let request = Request::Prompt {
        name: &args.name,
        arguments: args.args.clone().unwrap_or_default(),
    };
    run(&args.url, &args.connect, &args.answers, request)
}

/// `roundtrip read`.
pub fn read(args: &ReadArgs) -> ExitCode {
    run(
        &args.url,
        &args.connect,
        &args.answers,
        Request::Resource { uri: &args.uri },
    )
}

/// The one call a command makes.
enum Request<'a> {
    Tool {
        name: &'a str,
        arguments: Value,
    },
    Prompt {
        name: &'a str,
        arguments: Map<String, Value>,
    },
    Resource {
        uri: &'a str,
    },
}

impl Request<'_> {
    async fn send(self, client: &Client) -> Result<Printed, roundtrip_client::Error> {
        Ok(match self {
            Request::Tool { name, arguments } => {
                let result = client.call_tool(name, arguments).await?;
                let text = blocks_text(&result.content, result.structured_content.as_ref());
                Printed::new(&result, text, result.is_error)
            }
            Request::Prompt { name, arguments } => {
                let result = client.get_prompt(name, arguments).await?;
                Printed::new(&result, prompt_text(&result), false)
            }
            Request::Resource { uri } => {
                let result = client.read_resource(uri).await?;
                Printed::new(&result, contents_text(&result), false)
            }
        })
    }
}

/// What a command prints: the result as JSON and as text, and whether the result reports a
/// failure (a tool's `isError`).
struct Printed {
    json: String,
    text: String,
    failed: bool,
}

impl Printed {
    fn new(result: &impl Serialize, text: String, failed: bool) -> Printed {
        Printed {
            // The client's result types are maps and strings: writing them cannot fail.
            json: serde_json::to_string(result).unwrap_or_default(),
            text,
            failed,
        }
    }
}

fn run(url: &str, connect: &ConnectArgs, answers: &AnswerArgs, request: Request<'_>) -> ExitCode {
    match execute(url, connect, answers, request) {
        Ok(printed) => print(connect.json, &printed),
        Err(e) => {
            eprintln!("roundtrip: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn execute(
    url: &str,
    connect: &ConnectArgs,
    answers: &AnswerArgs,
    request: Request<'_>,
) -> anyhow::Result<Printed> {
    let answering = answering(connect, answers)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    runtime.block_on(async {
        let client = builder(connect, answering).connect_http(url).await?;
        let printed = request.send(&client).await;
        client.close().await;
        Ok::<_, anyhow::Error>(printed?)
    })
}

/// The answer sources the flags describe, as the client's handlers. The person at this
/// terminal is asked only when stdin is one.
fn answering(connect: &ConnectArgs, args: &AnswerArgs) -> anyhow::Result<Answering<Tty>> {
    let presets = PresetAnswers::new(args.answers.clone())?;
    let mut sources = AnswerSources::new(presets, Tty::if_stdin_is_terminal());
    if !connect.roots.is_empty() {
        sources = sources.with_roots(connect.roots.clone());
    }
    let sampling_tools = args.sampling_command.is_some();
    if let Some(command) = &args.sampling_command {
        let mut command = SamplingCommand::new(command.clone());
        if let Some(timeout) = args.sampling_timeout {
            command.timeout = timeout;
        }
        sources = sources.with_sampling_command(command);
    }
    Ok(Answering::new(sources, sampling_tools))
}

/// The client: the flags' era, headers and round cap, and a handler for each kind of request
/// the sources can answer, so that the capabilities it declares are the ones it has.
fn builder(connect: &ConnectArgs, answering: Answering<Tty>) -> ClientBuilder {
    let mut builder = Client::builder()
        .client_info("roundtrip", env!("CARGO_PKG_VERSION"))
        .era(match connect.era {
            EraArg::Auto => EraChoice::Auto,
            EraArg::Modern => EraChoice::Modern,
            EraArg::Legacy => EraChoice::Legacy,
        })
        .max_rounds(connect.max_rounds);
    for (name, value) in &connect.headers {
        builder = builder.header(name, value);
    }
    if let Some(token) = &connect.bearer {
        builder = builder.bearer(token);
    }
    if answering.can_answer(InputMethod::Sampling) {
        builder = builder.sampling(answering.clone());
    }
    if answering.can_answer(InputMethod::Roots) {
        builder = builder.roots(answering.clone());
    }
    builder.elicitation(answering)
}

fn print(json: bool, printed: &Printed) -> ExitCode {
    let out = if json { &printed.json } else { &printed.text };
    // A closed stdout (`| head`) is not worth a panic.
    let _ = writeln!(std::io::stdout().lock(), "{out}");
    if printed.failed {
        eprintln!("roundtrip: the tool reported an error");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// A tool's content as text: each text block's text, any other block as JSON, one per line;
/// the structured content when there are no blocks.
fn blocks_text(content: &[Value], structured: Option<&Value>) -> String {
    if content.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    content
        .iter()
        .map(block_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_text(block: &Value) -> String {
    match (block.get("type").and_then(Value::as_str), block.get("text")) {
        (Some("text"), Some(Value::String(text))) => text.clone(),
        _ => block.to_string(),
    }
}

/// A prompt's messages, one per line: `role: text`.
fn prompt_text(result: &GetPromptResult) -> String {
    result
        .messages
        .iter()
        .map(|m| format!("{}: {}", m.role, block_text(&m.content)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A resource's contents: text as it is; a blob described, not dumped (`--json` has it).
fn contents_text(result: &ReadResourceResult) -> String {
    result
        .contents
        .iter()
        .map(|c| match (&c.text, &c.blob) {
            (Some(text), _) => text.clone(),
            (None, blob) => format!(
                "[{}: {}, {} bytes of base64; --json prints it]",
                c.uri,
                c.mime_type.as_deref().unwrap_or("application/octet-stream"),
                blob.as_ref().map_or(0, String::len)
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_print_their_text_and_other_blocks_their_json() {
        let content = [
            json!({"type": "text", "text": "Hello"}),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
        ];
        assert_eq!(
            blocks_text(&content, None),
            "Hello\n{\"data\":\"AA==\",\"mimeType\":\"image/png\",\"type\":\"image\"}"
        );
    }

    #[test]
    fn a_tool_without_blocks_prints_its_structured_content() {
        assert_eq!(blocks_text(&[], Some(&json!({"n": 1}))), "{\"n\":1}");
    }

    #[test]
    fn a_blob_is_described_not_dumped() {
        let result: ReadResourceResult = serde_json::from_value(json!({"contents": [
            {"uri": "a://t", "text": "plain"},
            {"uri": "a://b", "mimeType": "image/png", "blob": "AAAA"}
        ]}))
        .expect("a result");
        assert_eq!(
            contents_text(&result),
            "plain\n[a://b: image/png, 4 bytes of base64; --json prints it]"
        );
    }
}
