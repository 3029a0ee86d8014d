//! Fixtures of the `server-stateless` scenario: the tools it calls to probe the 2026-07-28
//! rules that are not about a single handler's output.
//!
//! - `test_missing_capability` asks for sampling; the runtime's capability gate answers -32021
//!   for a client that did not declare it, before anything leaves the server.
//! - `test_streaming_elicitation` needs input, and on the stateless wire input is asked for in
//!   the result (input-required), never as a request on the response stream.
//! - `test_logging_tool` logs; the runtime drops the logs unless the request set a log level.
//! - `test_trigger_tool_change` / `test_trigger_prompt_change` announce a list change on the
//!   tenant's change feed, so that `subscriptions/listen` streams get a list-changed
//!   notification; the lists themselves stay as they are (the suite probes tools/list for a
//!   stable order across scenarios).

use std::sync::Arc;

use roundtrip_runtime::handler::{
    fn_tool, Context, InputRequired, Tool, ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::result::CallToolResult;
use roundtrip_runtime::protocol::{InputResponse, LogLevel};
use roundtrip_runtime::tenancy::{ListChanged, Tenant};
use serde_json::json;

/// Logger name of `test_logging_tool`'s messages.
const LOGGER: &str = "conformance";

pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fn_tool(
            ToolDescriptor::no_args(
                "test_missing_capability",
                "Needs the client's sampling capability (-32021 without it)",
            ),
            |ctx, _args| async move { missing_capability(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_streaming_elicitation",
                "Asks for an elicitation in its result, never on the stream",
            ),
            |ctx, _args| async move { streaming_elicitation(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_logging_tool",
                "Emits log messages, delivered only when the request sets a log level",
            ),
            |ctx, _args| async move { log_steps(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_trigger_tool_change",
                "Adds and removes test_dynamic_tool, notifying tools/list_changed subscribers",
            ),
            |ctx, _args| async move {
                trigger_tool_change(ctx.tenant());
                CallToolResult::text("tool list changed").into()
            },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_trigger_prompt_change",
                "Adds and removes test_dynamic_prompt, notifying prompts/list_changed subscribers",
            ),
            |ctx, _args| async move {
                trigger_prompt_change(ctx.tenant());
                CallToolResult::text("prompt list changed").into()
            },
        ),
    ]
}

fn missing_capability(ctx: &Context) -> ToolOutcome {
    match ctx
        .input_response("sample")
        .and_then(InputResponse::sampled_text)
    {
        Some(text) => CallToolResult::text(format!("Sampled: {text}")).into(),
        None => InputRequired::new()
            .sample_text("sample", "Say hello in one word.", 20)
            .into(),
    }
}

fn streaming_elicitation(ctx: &Context) -> ToolOutcome {
    match ctx
        .input_response("confirmation")
        .and_then(InputResponse::action)
    {
        Some(action) => CallToolResult::text(format!("Elicitation answered: {action:?}")).into(),
        None => InputRequired::new()
            .elicit(
                "confirmation",
                "Continue?",
                json!({"type": "object", "properties": {"continue": {"type": "boolean"}}}),
            )
            .into(),
    }
}

fn log_steps(ctx: &Context) -> ToolOutcome {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for step in steps {
        ctx.log(LogLevel::Info, Some(LOGGER), json!(step));
    }
    CallToolResult::text(format!("Logged {} messages.", steps.len())).into()
}

/// What the suite's trigger tools ask for: a list-changed notification on every listen stream
/// of the tenant. The lists stay as they are (a tool that added itself and left again would
/// end where it began), so the notification is all there is to the change.
fn trigger_tool_change(tenant: &Tenant) {
    tenant.publish(ListChanged::Tools);
}

fn trigger_prompt_change(tenant: &Tenant) {
    tenant.publish(ListChanged::Prompts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtrip_runtime::handler::{Arguments, Notifier, Outcome};

    fn tenant() -> Arc<Tenant> {
        Arc::new(Tenant::new("conformance", super::super::catalog()))
    }

    async fn call(tenant: &Arc<Tenant>, ctx: Context, name: &str) -> ToolOutcome {
        let view = tenant.view();
        let (tool, _) = view.catalog().tool(name).expect("tool listed");
        tool.call(ctx, Arguments::default()).await
    }

    #[actix_rt::test]
    async fn trigger_tools_publish_but_leave_the_lists_unchanged() {
        let tenant = tenant();
        let (tools, prompts) = (
            tenant.view().catalog().tools_list().clone(),
            tenant.view().catalog().prompts_list().clone(),
        );
        let mut events = tenant.subscribe();

        call(
            &tenant,
            Context::builder(tenant.clone()).build(),
            "test_trigger_tool_change",
        )
        .await
        .expect("ok");
        call(
            &tenant,
            Context::builder(tenant.clone()).build(),
            "test_trigger_prompt_change",
        )
        .await
        .expect("ok");

        assert_eq!(events.try_recv().ok(), Some(ListChanged::Tools));
        assert_eq!(events.try_recv().ok(), Some(ListChanged::Prompts));
        assert!(events.try_recv().is_err(), "one notification per trigger");
        assert_eq!(tenant.view().catalog().tools_list(), &tools);
        assert_eq!(tenant.view().catalog().prompts_list(), &prompts);
    }

    #[actix_rt::test]
    async fn missing_capability_asks_for_sampling_and_completes_when_answered() {
        let tenant = tenant();
        let ir = match call(
            &tenant,
            Context::builder(tenant.clone()).build(),
            "test_missing_capability",
        )
        .await
        {
            Ok(Outcome::InputRequired(ir)) => ir,
            other => panic!("expected input-required, got {other:?}"),
        };
        let methods: Vec<&str> = ir.requests().values().map(|r| r.method()).collect();
        assert_eq!(methods, ["sampling/createMessage"]);

        let answered = Context::builder(tenant.clone())
            .answer(
                "sample",
                json!({"role": "assistant", "content": {"type": "text", "text": "Hi"}}),
            )
            .build();
        assert!(matches!(
            call(&tenant, answered, "test_missing_capability").await,
            Ok(Outcome::Complete(_))
        ));
    }

    #[actix_rt::test]
    async fn logging_tool_logs_only_with_a_log_level() {
        let tenant = tenant();
        for (level, expected) in [
            (None, 0),
            (Some(LogLevel::Info), 3),
            (Some(LogLevel::Error), 0),
        ] {
            let (notifier, mut rx) = Notifier::channel(None, level);
            let ctx = Context::builder(tenant.clone())
                .notifier(Some(notifier))
                .build();
            call(&tenant, ctx, "test_logging_tool").await.expect("ok");
            let mut sent = 0;
            while rx.try_recv().is_ok() {
                sent += 1;
            }
            assert_eq!(sent, expected, "log level {level:?}");
        }
    }
}
