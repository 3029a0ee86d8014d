//! `roundtrip conformance-client URL`: the client the official conformance suite launches
//! for its client scenarios (`conformance client --command "roundtrip conformance-client"`;
//! the suite appends the mock server's URL and names the scenario in the environment).
//!
//! One plan serves every non-auth scenario: connect in the scenario's era, list the tools
//! and call each (with the context's `toolCalls` when the scenario gives them, otherwise with
//! arguments made from each tool's schema), then list and get the prompts and read the
//! resources. Every input request is answered: forms are accepted with their defaults
//! (SEP-1034), URLs accepted, sampling answered with a fixed text, roots listed. The mock
//! server judges what it saw; this command fails only when it cannot connect or list.

use std::process::ExitCode;

use roundtrip_client::handler::{elicit_with, sample_with, ElicitationModes};
use roundtrip_client::protocol::input::{CreateMessageResult, ElicitRequest, ElicitResult, Root};
use roundtrip_client::protocol::tools::Tool;
use roundtrip_client::{Client, EraChoice, ProtocolVersion};
use serde_json::{Map, Value};

use crate::cli::ConformanceClientArgs;

/// Scenarios in which the client only lists the tools: calling one would fetch nothing the
/// scenario checks (`json-schema-ref-no-deref` checks that a schema's network `$ref` is
/// never dereferenced).
const LIST_ONLY: &[&str] = &["json-schema-ref-no-deref"];

pub fn run(args: &ConformanceClientArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("roundtrip conformance-client: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(drive(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roundtrip conformance-client: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The era a scenario's protocol revision speaks.
fn era(protocol_version: Option<&str>) -> EraChoice {
    match protocol_version.and_then(ProtocolVersion::parse) {
        Some(v) if v.era() == roundtrip_client::Era::Modern => EraChoice::Modern,
        Some(_) => EraChoice::Legacy,
        None => EraChoice::Auto,
    }
}

async fn drive(args: &ConformanceClientArgs) -> anyhow::Result<()> {
    let scenario = args.scenario.as_deref().unwrap_or_default();
    let context: Value = match &args.context {
        Some(json) => serde_json::from_str(json)?,
        None => Value::Null,
    };
    let client = answering()
        .era(era(args.protocol_version.as_deref()))
        .connect_http(&args.url)
        .await?;
    eprintln!("connected: {:?}", client.server());
    let tools = client.list_tools().await?;
    if LIST_ONLY.contains(&scenario) {
        return Ok(());
    }
    for (name, arguments) in planned_calls(&tools, &context) {
        match client.call_tool(&name, arguments).await {
            Ok(result) => eprintln!("{name}: {}", result.text()),
            Err(e) => eprintln!("{name}: {e:#}"),
        }
    }
    if let Ok(prompts) = client.list_prompts().await {
        for prompt in prompts {
            if let Err(e) = client.get_prompt(&prompt.name, Map::new()).await {
                eprintln!("prompt {}: {e:#}", prompt.name);
            }
        }
    }
    if let Ok(resources) = client.list_resources().await {
        for resource in resources {
            if let Err(e) = client.read_resource(&resource.uri).await {
                eprintln!("resource {}: {e:#}", resource.uri);
            }
        }
    }
    client.close().await;
    Ok(())
}

/// A client answering every kind of input request.
fn answering() -> roundtrip_client::ClientBuilder {
    Client::builder()
        .client_info("roundtrip-conformance-client", env!("CARGO_PKG_VERSION"))
        .elicitation(elicit_with(
            ElicitationModes::BOTH,
            |request, _| async move {
                Ok(match request {
                    ElicitRequest::Form(form) => ElicitResult::accept(form.defaults()),
                    ElicitRequest::Url(_) => ElicitResult::accept_url(),
                })
            },
        ))
        .sampling(sample_with(true, |_, _| async {
            Ok(CreateMessageResult::text(
                "roundtrip-conformance-model",
                "Hello from the conformance client.",
            ))
        }))
        .roots(vec![Root::new(
            "file:///conformance",
            Some("conformance".into()),
        )])
}

/// The calls to make: the context's `toolCalls`, or every listed tool with arguments made
/// from its schema.
fn planned_calls(tools: &[Tool], context: &Value) -> Vec<(String, Value)> {
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        return calls
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                Some((name, call.get("arguments").cloned().unwrap_or(Value::Null)))
            })
            .collect();
    }
    tools
        .iter()
        .map(|tool| (tool.name.clone(), arguments_for(&tool.input_schema)))
        .collect()
}

/// Arguments for a schema's required properties: each one's default, its first enum value,
/// or a value of its type.
fn arguments_for(schema: &Value) -> Value {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for name in required {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        arguments.insert(name.to_owned(), sample_value(property));
    }
    Value::Object(arguments)
}

fn sample_value(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("integer") => Value::from(2),
        Some("number") => Value::from(3),
        Some("boolean") => Value::Bool(true),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => Value::Object(Map::new()),
        _ => Value::String("conformance".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_arguments_are_made_from_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer"}, "region": {"type": "string"},
            "mode": {"type": "string", "enum": ["fast", "slow"]}, "n": {"type": "integer", "default": 7},
            "optional": {"type": "string"}
        }, "required": ["a", "b", "region", "mode", "n"]});
        assert_eq!(
            arguments_for(&schema),
            json!({"a": 3, "b": 2, "region": "conformance", "mode": "fast", "n": 7})
        );
    }

    #[test]
    fn the_contexts_tool_calls_are_made_as_given() {
        let context = json!({"toolCalls": [{"name": "t", "arguments": {"x": " padded "}}]});
        assert_eq!(
            planned_calls(&[], &context),
            vec![("t".to_owned(), json!({"x": " padded "}))]
        );
    }

    #[test]
    fn the_protocol_version_picks_the_era() {
        assert_eq!(era(Some("2026-07-28")), EraChoice::Modern);
        assert_eq!(era(Some("2025-11-25")), EraChoice::Legacy);
        assert_eq!(era(Some("2025-06-18")), EraChoice::Legacy);
        assert_eq!(era(None), EraChoice::Auto);
    }
}
