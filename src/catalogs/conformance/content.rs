//! Plain content fixtures: tools that return each kind of content block, the prompts of the
//! `prompts-get-*` scenarios, the `test://` resources and the resource template.
//!
//! The suite checks shapes, not exact bytes, but the media is real anyway (a 1×1 PNG and a
//! short WAV) so that a client rendering these results gets something it can decode. Texts
//! follow the reference servers', which keeps our traces comparable with theirs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use roundtrip_runtime::handler::{
    fn_prompt, fn_tool, Arguments, Context, Prompt, PromptDescriptor, PromptOutcome, Resource,
    ResourceDescriptor, ResourceOutcome, ResourceTemplate, TemplateDescriptor, TemplateVars, Tool,
    ToolDescriptor,
};
use roundtrip_runtime::protocol::content::Content;
use roundtrip_runtime::protocol::result::{
    CallToolResult, Completion, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContents,
};
use serde_json::json;

/// A 1×1 opaque red PNG (RGBA, 70 bytes), base64. Generated once with Python's `zlib` and
/// `struct`: signature, IHDR, one deflated scanline, IEND, each chunk with its CRC.
pub(super) const PNG_1X1_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAFAAH/VscvDQAAAABJRU5ErkJggg==";

/// One millisecond of silence as a WAV file (RIFF, PCM, mono, 8 kHz, 16-bit, 8 samples;
/// 60 bytes), base64. Generated once with Python's `struct`; Python's `wave` module reads it.
pub(super) const WAV_SILENCE_BASE64: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// Pause between two progress notifications of `test_tool_with_progress`.
const PROGRESS_STEP: Duration = Duration::from_millis(50);

/// Values offered by `completion/complete` for `test_prompt_with_arguments`.
const ARGUMENT_SUGGESTIONS: &[&str] = &[
    "testValue1",
    "testValue2",
    "test-environment",
    "production",
    "staging",
];

/// Ids offered by `completion/complete` for the template's `{id}`.
const TEMPLATE_IDS: &[&str] = &["1", "2", "3", "42", "123"];

pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fn_tool(
            ToolDescriptor::no_args("test_simple_text", "Tests simple text content response"),
            |_ctx, _args| async move {
                CallToolResult::text("This is a simple text response for testing.").into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args("test_image_content", "Tests image content response"),
            |_ctx, _args| async move {
                CallToolResult::content(vec![Content::image(PNG_1X1_BASE64, "image/png")]).into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args("test_audio_content", "Tests audio content response"),
            |_ctx, _args| async move {
                CallToolResult::content(vec![Content::audio(WAV_SILENCE_BASE64, "audio/wav")])
                    .into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_embedded_resource",
                "Tests embedded resource content response",
            ),
            |_ctx, _args| async move {
                CallToolResult::content(vec![Content::resource(ResourceContents::text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))])
                .into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_multiple_content_types",
                "Tests response with text, image and embedded resource content",
            ),
            |_ctx, _args| async move {
                CallToolResult::content(vec![
                    Content::text("Multiple content types test:"),
                    Content::image(PNG_1X1_BASE64, "image/png"),
                    Content::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )),
                ])
                .into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_error_handling",
                "Tests error response handling: always fails with an isError result",
            ),
            |_ctx, _args| async move {
                CallToolResult::error("This tool intentionally returns an error for testing.")
                    .into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_tool_with_progress",
                "Tests progress notifications: reports 0, 50 and 100 of 100 before answering",
            ),
            |ctx, _args| async move {
                report_progress(&ctx).await;
                CallToolResult::text("Completed all 100 steps.").into()
            },
        ),
    ]
}

/// Three progress notifications, `PROGRESS_STEP` apart. The runtime drops them when the
/// request carried no progress token.
async fn report_progress(ctx: &Context) {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            actix_rt::time::sleep(PROGRESS_STEP).await;
        }
        let message = format!("Completed step {step} of 100");
        ctx.progress(step, Some(100.0), Some(&message));
    }
}

pub(super) fn prompts() -> Vec<Arc<dyn Prompt>> {
    vec![
        fn_prompt(
            PromptDescriptor::new("test_simple_prompt", "A simple prompt without arguments"),
            |_ctx, _args| async move {
                prompt(vec![PromptMessage::user(Content::text(
                    "This is a simple prompt for testing.",
                ))])
            },
        ),
        Arc::new(PromptWithArguments),
        fn_prompt(
            PromptDescriptor::new(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
            )
            .argument("resourceUri", "URI of the resource to embed", true),
            |_ctx, args| async move {
                let uri = args.str("resourceUri")?;
                prompt(vec![
                    PromptMessage::user(Content::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    PromptMessage::user(Content::text(
                        "Please process the embedded resource above.",
                    )),
                ])
            },
        ),
        fn_prompt(
            PromptDescriptor::new(
                "test_prompt_with_image",
                "A prompt that includes image content",
            ),
            |_ctx, _args| async move {
                prompt(vec![
                    PromptMessage::user(Content::image(PNG_1X1_BASE64, "image/png")),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ])
            },
        ),
    ]
}

fn prompt(messages: Vec<PromptMessage>) -> PromptOutcome {
    GetPromptResult {
        description: None,
        messages,
    }
    .into()
}

/// `test_prompt_with_arguments`: the one prompt with completions (`completion-complete`).
struct PromptWithArguments;

#[async_trait(?Send)]
impl Prompt for PromptWithArguments {
    fn descriptor(&self) -> PromptDescriptor {
        PromptDescriptor::new(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
        )
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
    }

    async fn get(&self, _ctx: Context, args: Arguments) -> PromptOutcome {
        let (arg1, arg2) = (args.str("arg1")?, args.str("arg2")?);
        prompt(vec![PromptMessage::user(Content::text(format!(
            "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
        )))])
    }

    fn complete(&self, argument: &str, value: &str) -> Completion {
        match argument {
            "arg1" | "arg2" => complete_from(ARGUMENT_SUGGESTIONS, value),
            _ => Completion::default(),
        }
    }
}

/// The candidates starting with `prefix`, ignoring ASCII case.
fn complete_from(candidates: &[&str], prefix: &str) -> Completion {
    let prefix = prefix.to_ascii_lowercase();
    let values: Vec<String> = candidates
        .iter()
        .filter(|c| c.to_ascii_lowercase().starts_with(&prefix))
        .map(|c| (*c).to_owned())
        .collect();
    Completion {
        total: Some(values.len() as u64),
        values,
        has_more: false,
    }
}

pub(super) fn resources() -> Vec<Arc<dyn Resource>> {
    vec![Arc::new(StaticText), Arc::new(StaticBinary)]
}

/// `test://static-text`. Listed first: the `caching` scenario reads the first listed resource.
struct StaticText;

#[async_trait(?Send)]
impl Resource for StaticText {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new("test://static-text", "static_text_resource", "text/plain")
            .with_description("A static text resource for testing")
    }

    async fn read(&self, _ctx: Context) -> ResourceOutcome {
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                "test://static-text",
                "text/plain",
                "This is the content of the static text resource.",
            )],
        }
        .into()
    }
}

/// `test://static-binary`: the PNG as a blob.
struct StaticBinary;

#[async_trait(?Send)]
impl Resource for StaticBinary {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new(
            "test://static-binary",
            "static_binary_resource",
            "image/png",
        )
        .with_description("A static binary resource (a 1x1 PNG) for testing")
    }

    async fn read(&self, _ctx: Context) -> ResourceOutcome {
        ReadResourceResult {
            contents: vec![ResourceContents::blob(
                "test://static-binary",
                "image/png",
                PNG_1X1_BASE64,
            )],
        }
        .into()
    }
}

pub(super) fn templates() -> Vec<Arc<dyn ResourceTemplate>> {
    vec![Arc::new(DataTemplate)]
}

/// `test://template/{id}/data`: a JSON document naming the id it was read with.
struct DataTemplate;

#[async_trait(?Send)]
impl ResourceTemplate for DataTemplate {
    fn descriptor(&self) -> TemplateDescriptor {
        TemplateDescriptor::new(
            "test://template/{id}/data",
            "template_data_resource",
            "application/json",
        )
        .with_description("A resource template: data for any id")
    }

    async fn read(&self, _ctx: Context, uri: &str, vars: TemplateVars) -> ResourceOutcome {
        let id = vars.get("id").map(String::as_str).unwrap_or_default();
        let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                uri,
                "application/json",
                text.to_string(),
            )],
        }
        .into()
    }

    fn complete(&self, argument: &str, value: &str) -> Completion {
        match argument {
            "id" => complete_from(TEMPLATE_IDS, value),
            _ => Completion::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use roundtrip_runtime::handler::Notifier;
    use roundtrip_runtime::tenancy::Tenant;

    fn decode(b64: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("valid base64")
    }

    #[test]
    fn the_png_is_a_png() {
        let png = decode(PNG_1X1_BASE64);
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(&png[12..16], b"IHDR");
        assert!(png.ends_with(b"IEND\xaeB`\x82"));
    }

    #[test]
    fn the_wav_is_a_pcm_wav_whose_sizes_add_up() {
        let wav = decode(WAV_SILENCE_BASE64);
        let le32 = |at: usize| u32::from_le_bytes([wav[at], wav[at + 1], wav[at + 2], wav[at + 3]]);
        assert_eq!((&wav[0..4], &wav[8..16]), (&b"RIFF"[..], &b"WAVEfmt "[..]));
        assert_eq!(le32(4) as usize, wav.len() - 8);
        assert_eq!(&wav[36..40], b"data");
        assert_eq!(le32(40) as usize, wav.len() - 44);
    }

    #[actix_rt::test]
    async fn progress_reports_three_increasing_steps_of_the_request_token() {
        let (notifier, mut rx) = Notifier::channel(Some(json!("p1")), None);
        let tenant = Arc::new(Tenant::new(
            "t",
            roundtrip_runtime::handler::Catalog::default(),
        ));
        let ctx = Context::builder(tenant).notifier(Some(notifier)).build();
        report_progress(&ctx).await;
        let mut steps = Vec::new();
        while let Ok(n) = rx.try_recv() {
            assert_eq!(
                (n.method, &n.params["progressToken"]),
                ("notifications/progress", &json!("p1"))
            );
            steps.push(n.params["progress"].as_f64().expect("a number"));
        }
        assert_eq!(steps, [0.0, 50.0, 100.0]);
    }

    #[test]
    fn completion_filters_by_prefix_ignoring_case() {
        let c = PromptWithArguments.complete("arg1", "TEST");
        assert_eq!(c.values, ["testValue1", "testValue2", "test-environment"]);
        assert_eq!(c.total, Some(3));
        assert!(PromptWithArguments
            .complete("arg1", "zzz")
            .values
            .is_empty());
        assert!(PromptWithArguments.complete("other", "").values.is_empty());
    }

    #[test]
    fn template_ids_complete() {
        assert_eq!(DataTemplate.complete("id", "12").values, ["123"]);
    }
}
