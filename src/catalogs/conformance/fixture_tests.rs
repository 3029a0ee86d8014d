//! What the fixtures' unit tests share: a context to run a handler in, and the two ways a
//! tool run can end.

use std::sync::Arc;

use roundtrip_runtime::handler::{
    Catalog, Context, ContextBuilder, InputRequired, Outcome, ToolOutcome,
};
use roundtrip_runtime::protocol::result::CallToolResult;
use roundtrip_runtime::tenancy::Tenant;

/// A context on an empty tenant.
pub(super) fn builder() -> ContextBuilder {
    Context::builder(Arc::new(Tenant::new("t", Catalog::builder().build())))
}

/// The input-required outcome of a run (panics on anything else).
pub(super) fn asked(outcome: ToolOutcome) -> InputRequired {
    match outcome {
        Ok(Outcome::InputRequired(ir)) => ir,
        other => panic!("expected input-required, got {other:?}"),
    }
}

/// The complete result of a run (panics on anything else).
pub(super) fn completed(outcome: ToolOutcome) -> CallToolResult {
    match outcome {
        Ok(Outcome::Complete(r)) => r,
        other => panic!("expected a complete result, got {other:?}"),
    }
}
