//! The methods that never ask for input: discovery, lists, completion, and the set-up of a
//! `subscriptions/listen` stream.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::call::Call;
use super::reply::{Following, Listen};
use crate::budget::Account;
use crate::handler::{Catalog, TenantView};
use crate::protocol::result::{to_object, Completion};
use crate::protocol::{Era, McpError, Method, ProtocolVersion};

/// Most completion values one answer carries (the spec's cap).
const MAX_COMPLETIONS: usize = 100;

/// `server/discover`: versions, capabilities (only what the catalog really has), caching
/// hints. `serverInfo` goes into `_meta` when the result is stamped.
pub(crate) fn discover(call: &Call) -> Map<String, Value> {
    let view = &call.view;
    let caps = server_capabilities(&call.catalog);
    let mut out = Map::new();
    out.insert(
        "supportedVersions".into(),
        json!(ProtocolVersion::MODERN_STRS),
    );
    out.insert("capabilities".into(), Value::Object(caps));
    if let Some(instructions) = view.instructions() {
        out.insert("instructions".into(), json!(instructions));
    }
    cache_hints(&mut out, view);
    out
}

/// The server capabilities a catalog supports: only what it really has. `server/discover`
/// and a legacy `initialize` both advertise these.
pub fn server_capabilities(catalog: &Catalog) -> Map<String, Value> {
    let mut caps = Map::new();
    if catalog.has_tools() {
        caps.insert("tools".into(), json!({ "listChanged": true }));
    }
    if catalog.has_prompts() {
        caps.insert("prompts".into(), json!({ "listChanged": true }));
    }
    if catalog.has_resources() {
        caps.insert(
            "resources".into(),
            json!({ "subscribe": true, "listChanged": true }),
        );
    }
    if catalog.has_prompts() || catalog.has_resources() {
        caps.insert("completions".into(), json!({}));
    }
    caps.insert("logging".into(), json!({}));
    caps
}

/// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`. Lists fit in
/// one page, so Roundtrip never issues a cursor and any cursor is invalid.
pub(crate) fn list(method: &Method, call: &Call) -> Result<Map<String, Value>, McpError> {
    let params = call.request.params.as_ref();
    if params
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null())
    {
        return Err(McpError::invalid_params("Invalid cursor"));
    }
    let catalog = &call.catalog;
    let (key, items, offered) = match method {
        Method::ToolsList => ("tools", catalog.tools_list(), catalog.has_tools()),
        Method::PromptsList => ("prompts", catalog.prompts_list(), catalog.has_prompts()),
        Method::ResourcesList => (
            "resources",
            catalog.resources_list(),
            catalog.has_resources(),
        ),
        _ => (
            "resourceTemplates",
            catalog.templates_list(),
            catalog.has_resources(),
        ),
    };
    if !offered {
        return Err(McpError::method_not_found(method.as_str()));
    }
    let mut out = Map::new();
    out.insert(key.into(), Value::clone(items));
    if call.scope.era == Era::Modern {
        cache_hints(&mut out, &call.view);
    }
    Ok(out)
}

fn cache_hints(out: &mut Map<String, Value>, view: &TenantView) {
    let ttl = u64::try_from(view.settings().list_ttl.as_millis()).unwrap_or(u64::MAX);
    out.insert("ttlMs".into(), json!(ttl));
    out.insert("cacheScope".into(), json!("private"));
}

/// Caching hints of a complete `resources/read`: content may change at any time, and a
/// result produced by a retry depends on answers no cache key holds.
pub(crate) fn read_cache_hints(out: &mut Map<String, Value>) {
    out.insert("ttlMs".into(), json!(0));
    out.insert("cacheScope".into(), json!("private"));
}

/// `completion/complete` for a prompt argument or a resource-template variable.
pub(crate) fn complete(call: &Call) -> Result<Map<String, Value>, McpError> {
    let params = call.request.params.as_ref();
    let catalog = &call.catalog;
    if !catalog.has_prompts() && !catalog.has_resources() {
        return Err(McpError::method_not_found(call.request.method.as_str()));
    }
    let params = params.ok_or_else(|| McpError::invalid_params("Missing params"))?;
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| McpError::invalid_params("Missing params.ref"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| McpError::invalid_params("Missing params.argument"))?;
    let (Some(arg_name), Some(arg_value)) = (
        argument.get("name").and_then(Value::as_str),
        argument.get("value").and_then(Value::as_str),
    ) else {
        return Err(McpError::invalid_params(
            "params.argument needs string name and value",
        ));
    };
    let str_field = |k: &str| reference.get(k).and_then(Value::as_str);
    let mut completion: Completion = match str_field("type") {
        Some("ref/prompt") => {
            let name = str_field("name")
                .ok_or_else(|| McpError::invalid_params("ref/prompt needs a name"))?;
            catalog
                .prompt(name)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}")))?
                .complete(arg_name, arg_value)
        }
        Some("ref/resource") => {
            let uri = str_field("uri")
                .ok_or_else(|| McpError::invalid_params("ref/resource needs a uri"))?;
            catalog
                .template_by_pattern(uri)
                .ok_or_else(|| {
                    McpError::invalid_params(format!("Unknown resource template: {uri}"))
                })?
                .complete(arg_name, arg_value)
        }
        _ => {
            return Err(McpError::invalid_params(
                "params.ref.type must be ref/prompt or ref/resource",
            ))
        }
    };
    if completion.values.len() > MAX_COMPLETIONS {
        completion
            .total
            .get_or_insert(completion.values.len() as u64);
        completion.values.truncate(MAX_COMPLETIONS);
        completion.has_more = true;
    }
    let mut out = Map::new();
    out.insert("completion".into(), Value::Object(to_object(&completion)));
    Ok(out)
}

/// Resource URIs one listen stream follows at most, as a legacy session does.
const MAX_LISTEN_URIS: usize = 256;

/// The longest resource URI a listen stream follows.
const MAX_URI_BYTES: usize = 2048;

/// `subscriptions/listen`: which of the requested notifications this tenant honours. The
/// transport keeps the stream open and renders each change through [`Listen::render`].
pub(crate) fn listen(call: &Call) -> Result<Listen, McpError> {
    let catalog = &call.catalog;
    if !catalog.has_tools() && !catalog.has_prompts() && !catalog.has_resources() {
        // Nothing could ever change, and discover advertises no list-changed: no such method.
        return Err(McpError::method_not_found(call.request.method.as_str()));
    }
    let filter = call
        .request
        .params
        .as_ref()
        .and_then(|p| p.get("notifications"))
        .and_then(Value::as_object)
        .ok_or_else(|| McpError::invalid_params("Missing required params.notifications"))?;
    let flag = |k: &str| filter.get(k).and_then(Value::as_bool).unwrap_or(false);
    let tools = flag("toolsListChanged") && catalog.has_tools();
    let prompts = flag("promptsListChanged") && catalog.has_prompts();
    let resources = flag("resourcesListChanged") && catalog.has_resources();
    let uris: HashSet<String> = match filter.get("resourceSubscriptions") {
        None | Some(Value::Null) => HashSet::new(),
        Some(Value::Array(list)) if list.len() > MAX_LISTEN_URIS => {
            return Err(McpError::invalid_params(format!(
                "resourceSubscriptions lists {} URIs, above the cap of {MAX_LISTEN_URIS}",
                list.len()
            )))
        }
        Some(Value::Array(list)) if catalog.has_resources() => list
            .iter()
            .filter_map(Value::as_str)
            .map(|uri| match uri.len() {
                n if n > MAX_URI_BYTES => Err(McpError::invalid_params(format!(
                    "A resourceSubscriptions URI is {n} bytes, above the cap of \
                     {MAX_URI_BYTES} bytes"
                ))),
                _ => Ok(uri.to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Array(_)) => HashSet::new(),
        Some(_) => {
            return Err(McpError::invalid_params(
                "resourceSubscriptions must be an array of URIs",
            ))
        }
    };
    let following = Following {
        tools,
        prompts,
        resources,
        uris,
    };
    Ok(Listen::new(
        call.request.id.clone(),
        call.tenant.clone(),
        Account::of(&call.tenant, call.principal.id_arc(), call.client),
        following,
    ))
}
