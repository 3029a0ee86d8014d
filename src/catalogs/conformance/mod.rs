//! The `conformance` catalog: the fixtures the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `tests/conformance/run.sh`) calls by name.
//! Names, keys and texts are fixed by the suite's scenarios (its sources say what each one
//! sends and checks; `tests/conformance/README.md` says how to run them).
//!
//! - [`content`]: tools returning each content kind, the plain prompts, the `test://`
//!   resources and the resource template;
//! - [`stateless`]: the tools `server-stateless` probes (capability gate, no server requests
//!   or unrequested logs on a stream, list-changed triggers);
//! - [`mrtr`]: the multi round-trip (input-required) tools and prompt;
//! - [`legacy`]: the fixtures of the legacy-only (2025-11-25) scenarios: sampling,
//!   elicitation (plain, SEP-1034 defaults, SEP-1330 enums), logging, and the subscribable
//!   `test://watched-resource`; written as input-required handlers that the runtime's legacy
//!   shim turns into server-to-client requests;
//! - [`headers`]: the `x-mcp-header` tool and the JSON Schema 2020-12 tool.
//!
//! **Order matters** and is fixed here: lists keep insertion order, and some scenarios use
//! "the first one". `tools[0]` (`test_simple_text`) must succeed with `{}` arguments
//! (`http-header-validation`); the first tool annotating any property with `x-mcp-header` must
//! annotate a string (`http-custom-header-server-validation`), so `headers` comes last;
//! `resources[0]` must be readable (`caching`). Later groups (`legacy`) are appended after
//! the existing ones (tools before `headers`) so that none of these "first" items moves.

mod content;
#[cfg(test)]
mod fixture_tests;
mod headers;
mod legacy;
mod mrtr;
mod stateless;

use roundtrip_runtime::handler::Catalog;

pub fn catalog() -> Catalog {
    let mut builder = Catalog::builder();
    for tool in content::tools()
        .into_iter()
        .chain(stateless::tools())
        .chain(mrtr::tools())
        .chain(legacy::tools())
        .chain(headers::tools())
    {
        builder = builder.tool(tool);
    }
    for prompt in content::prompts().into_iter().chain(mrtr::prompts()) {
        builder = builder.prompt(prompt);
    }
    for resource in content::resources().into_iter().chain(legacy::resources()) {
        builder = builder.resource(resource);
    }
    for template in content::templates() {
        builder = builder.template(template);
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn names(list: &Value, key: &str) -> Vec<String> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| Some(item.get(key)?.as_str()?.to_owned()))
            .collect()
    }

    #[test]
    fn every_fixture_the_suite_calls_is_listed() {
        let c = catalog();
        let tools = names(c.tools_list(), "name");
        for name in [
            "test_simple_text",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_multiple_content_types",
            "test_error_handling",
            "test_tool_with_progress",
            "test_missing_capability",
            "test_streaming_elicitation",
            "test_logging_tool",
            "test_trigger_tool_change",
            "test_trigger_prompt_change",
            "test_input_required_result_elicitation",
            "test_input_required_result_sampling",
            "test_input_required_result_list_roots",
            "test_input_required_result_request_state",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_multi_round",
            "test_input_required_result_tampered_state",
            "test_input_required_result_capabilities",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
            "test_tool_with_logging",
            "test_x_mcp_header",
            "json_schema_2020_12_tool",
        ] {
            assert!(tools.iter().any(|t| t == name), "tool {name} listed");
        }
        let prompts = names(c.prompts_list(), "name");
        for name in [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt",
        ] {
            assert!(prompts.iter().any(|p| p == name), "prompt {name} listed");
        }
        assert!(c.resource("test://static-binary").is_some());
        assert!(c.resource("test://watched-resource").is_some());
        assert!(c.template_for("test://template/123/data").is_some());
    }

    #[test]
    fn the_order_constraints_hold() {
        let c = catalog();
        assert_eq!(names(c.tools_list(), "name")[0], "test_simple_text");
        assert_eq!(names(c.resources_list(), "uri")[0], "test://static-text");
        let first_annotated = c
            .tools_list()
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|t| {
                let props = t.get("inputSchema")?.get("properties")?.as_object()?;
                props
                    .values()
                    .any(|p| p.get("x-mcp-header").is_some())
                    .then_some(props)
            })
            .expect("a tool with x-mcp-header");
        assert!(first_annotated
            .values()
            .any(|p| p.get("x-mcp-header").is_some() && p["type"] == "string"));
    }

    #[test]
    fn names_and_descriptions_are_well_formed() {
        let c = catalog();
        let name_ok = |n: &str| {
            (1..=128).contains(&n.len())
                && n.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch))
        };
        for tool in c.tools_list().as_array().into_iter().flatten() {
            assert!(name_ok(tool["name"].as_str().unwrap_or_default()), "{tool}");
            assert!(
                !tool["description"].as_str().unwrap_or_default().is_empty(),
                "{tool}"
            );
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        }
        for prompt in c.prompts_list().as_array().into_iter().flatten() {
            assert!(
                !prompt["description"]
                    .as_str()
                    .unwrap_or_default()
                    .is_empty(),
                "{prompt}"
            );
        }
    }
}
