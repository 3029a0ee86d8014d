//! Audit events: one per `tools/call`, `prompts/get` and `resources/read`, and one per admin
//! action. Arguments are never recorded, and neither is any secret.

use roundtrip_runtime::tenancy::CallOutcome;
use serde::{Deserialize, Serialize};

use crate::model::{Millis, Slug};

/// What kind of thing happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// A call on the MCP endpoint.
    Call,
    /// An action on the admin API (or the CLI).
    Admin,
}

impl AuditKind {
    /// The name the store and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::Call => "call",
            AuditKind::Admin => "admin",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<AuditKind> {
        match s {
            "call" => Some(AuditKind::Call),
            "admin" => Some(AuditKind::Admin),
            _ => None,
        }
    }
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// A complete result (or an admin action that succeeded).
    Complete,
    /// An input-required result: the client is asked and retries.
    InputRequired,
    /// An error; the event's `error_code` says which.
    Error,
}

impl AuditOutcome {
    /// A call's outcome as the log records it, with its JSON-RPC error code when it has one
    /// (a cancelled call is an error without a code).
    pub fn of_call(outcome: CallOutcome) -> (AuditOutcome, Option<i64>) {
        match outcome {
            CallOutcome::Complete => (AuditOutcome::Complete, None),
            CallOutcome::InputRequired => (AuditOutcome::InputRequired, None),
            CallOutcome::Error(code) => (AuditOutcome::Error, Some(code)),
            CallOutcome::Cancelled => (AuditOutcome::Error, None),
        }
    }

    /// The name the store and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Complete => "complete",
            AuditOutcome::InputRequired => "input_required",
            AuditOutcome::Error => "error",
        }
    }

    /// The outcome named `s`.
    pub fn parse(s: &str) -> Option<AuditOutcome> {
        match s {
            "complete" => Some(AuditOutcome::Complete),
            "input_required" => Some(AuditOutcome::InputRequired),
            "error" => Some(AuditOutcome::Error),
            _ => None,
        }
    }
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Its place in the log, given by the store (0 before it is written).
    pub id: i64,
    /// The tenant it concerns.
    pub tenant: Slug,
    /// When it happened.
    pub at: Millis,
    /// Who: a principal (`key:{id}`, `anonymous`) or `operator`.
    pub actor: String,
    /// A call or an admin action.
    pub kind: AuditKind,
    /// The MCP method (`tools/call`, ...) or the admin action (`tenant.update`, `key.create`,
    /// ...).
    pub action: String,
    /// The tool or prompt name, the resource URI, or the admin action's object (a key id).
    pub target: Option<String>,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// The JSON-RPC error code (calls) or HTTP status (admin actions) of an error.
    pub error_code: Option<i64>,
    /// The round of a multi round-trip call (0 for a first call, n after n input-required
    /// results; a legacy shim flow: the rounds it took).
    pub round: Option<i64>,
    /// How long it took, microseconds.
    pub latency_us: Option<i64>,
}

impl AuditEvent {
    /// An admin action that succeeded now: `actor` did `action` to `tenant` (or its `target`).
    pub fn admin(tenant: &Slug, actor: &str, action: &str, target: Option<&str>) -> AuditEvent {
        AuditEvent {
            id: 0,
            tenant: tenant.clone(),
            at: Millis::now(),
            actor: actor.to_owned(),
            kind: AuditKind::Admin,
            action: action.to_owned(),
            target: target.map(str::to_owned),
            outcome: AuditOutcome::Complete,
            error_code: None,
            round: None,
            latency_us: None,
        }
    }
}

/// Which audit events to read: the tenant's, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only events at or after this moment.
    pub since: Option<Millis>,
    /// Only events about this target.
    pub target: Option<String>,
    /// Only events with this outcome.
    pub outcome: Option<AuditOutcome>,
    /// Only events older than this id (the cursor of the previous page).
    pub before_id: Option<i64>,
    /// At most this many.
    pub limit: u32,
}
