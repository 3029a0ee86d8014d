//! A catalog: the tools, prompts, resources, templates and custom methods a tenant exposes.
//!
//! Built once and then read-only; list results are built once, at build time, since lists
//! are read far more often than catalogs change. Order is insertion order, so `tools/list` is
//! deterministic.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::HashMap;
use serde_json::Value;

use super::descriptor::{HeaderParam, ToolDescriptor};
use super::principal::Allow;

use super::traits::{MethodHandler, Prompt, Resource, ResourceTemplate, TemplateVars, Tool};
use crate::protocol::Method;

struct ToolEntry {
    tool: Arc<dyn Tool>,
    descriptor: ToolDescriptor,
    header_params: Vec<HeaderParam>,
}

/// Everything one tenant serves, looked up by name or URI, with its list results built once.
/// Cloning shares the handlers and the lists.
#[derive(Clone, Default)]
pub struct Catalog {
    tools: Vec<Arc<ToolEntry>>,
    tool_index: HashMap<Arc<str>, usize>,
    prompts: Vec<Arc<dyn Prompt>>,
    prompt_index: HashMap<Arc<str>, usize>,
    resources: Vec<Arc<dyn Resource>>,
    resource_index: HashMap<Arc<str>, usize>,
    templates: Vec<(Arc<dyn ResourceTemplate>, UriTemplate)>,
    methods: Vec<Arc<dyn MethodHandler>>,
    lists: Lists,
    /// The tools (their places in `tools`) that mirror an argument into an `Mcp-Param-*`
    /// header: few, usually none.
    mirroring: Vec<usize>,
}

/// Up to this many tools that mirror arguments, one is found by comparing names: a name that
/// differs in length is told apart at once, where the index hashes the whole name.
const MIRRORING_SCAN_MAX: usize = 8;

#[derive(Clone, Default)]
struct Lists {
    tools: Arc<Value>,
    prompts: Arc<Value>,
    resources: Arc<Value>,
    templates: Arc<Value>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.tool_index.keys().collect::<Vec<_>>())
            .field("prompts", &self.prompt_index.keys().collect::<Vec<_>>())
            .field("resources", &self.resource_index.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// An empty builder.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// The tool named `name`, with its descriptor and header-mirrored arguments.
    pub fn tool(&self, name: &str) -> Option<(&Arc<dyn Tool>, &[HeaderParam])> {
        let e = &self.tools[*self.tool_index.get(name)?];
        Some((&e.tool, &e.header_params))
    }

    /// Whether any of its tools mirrors an argument into an `Mcp-Param-*` header: when none
    /// does, a `tools/call` has no such header to check, and its tool is not looked up for it.
    pub fn mirrors_params(&self) -> bool {
        !self.mirroring.is_empty()
    }

    /// The arguments the tool named `name` mirrors into `Mcp-Param-*` headers: none for a
    /// tool that mirrors none or that the catalog does not have. Checked on every `tools/call`
    /// over HTTP: among a few mirroring tools the name is compared with theirs, and only
    /// beyond [`MIRRORING_SCAN_MAX`] is it looked up in the whole index.
    pub fn header_params(&self, name: &str) -> &[HeaderParam] {
        let entry = if self.mirroring.len() <= MIRRORING_SCAN_MAX {
            self.mirroring
                .iter()
                .map(|&i| &self.tools[i])
                .find(|e| e.descriptor.name == name)
        } else {
            self.tool_index.get(name).map(|&i| &self.tools[i])
        };
        entry.map_or(&[], |e| &e.header_params)
    }

    /// Whether the tool named `name` takes each sealed state once (`false` for no such tool).
    pub fn single_use_state(&self, name: &str) -> bool {
        self.tool_index
            .get(name)
            .is_some_and(|&i| self.tools[i].descriptor.single_use_state)
    }

    /// The prompt named `name`.
    pub fn prompt(&self, name: &str) -> Option<&Arc<dyn Prompt>> {
        Some(&self.prompts[*self.prompt_index.get(name)?])
    }

    /// The concrete resource whose URI is exactly `uri` (templates are not consulted: see
    /// [`Catalog::template_for`]).
    pub fn resource(&self, uri: &str) -> Option<&Arc<dyn Resource>> {
        Some(&self.resources[*self.resource_index.get(uri)?])
    }

    /// The catalog's own copy of the name (or URI) a `tools/call`, `prompts/get` or
    /// `resources/read` targets, when it has that tool, prompt or resource: shared, not
    /// copied, by what outlives the request (its audit record).
    pub(crate) fn target_name(&self, method: &Method, target: &str) -> Option<Arc<str>> {
        let index = match method {
            Method::ToolsCall => &self.tool_index,
            Method::PromptsGet => &self.prompt_index,
            Method::ResourcesRead => &self.resource_index,
            _ => return None,
        };
        index.get_key_value(target).map(|(name, _)| name.clone())
    }

    /// The first template matching `uri`, with the values of its variables.
    pub fn template_for(&self, uri: &str) -> Option<(&Arc<dyn ResourceTemplate>, TemplateVars)> {
        self.templates
            .iter()
            .find_map(|(t, pattern)| pattern.matches(uri).map(|vars| (t, vars)))
    }

    /// The template whose URI template is exactly `uri_template` (for completions).
    pub fn template_by_pattern(&self, uri_template: &str) -> Option<&Arc<dyn ResourceTemplate>> {
        self.templates
            .iter()
            .find(|(_, p)| p.source == uri_template)
            .map(|(t, _)| t)
    }

    /// The custom method handler for `method`.
    pub fn method(&self, method: &str) -> Option<&Arc<dyn MethodHandler>> {
        self.methods.iter().find(|m| m.method() == method)
    }

    /// Whether it serves any tool: without one, `tools/*` methods are -32601 and the
    /// `tools` capability is not advertised.
    pub(crate) fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    /// Whether it serves any prompt (gates `prompts/*` and the `prompts` capability).
    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Whether it serves any resource or resource template (gates `resources/*` and the
    /// `resources` capability).
    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    /// `tools/list` items, serialised once.
    pub fn tools_list(&self) -> &Arc<Value> {
        &self.lists.tools
    }

    /// `prompts/list` items, serialised once.
    pub fn prompts_list(&self) -> &Arc<Value> {
        &self.lists.prompts
    }

    /// `resources/list` items (concrete resources only), serialised once.
    pub fn resources_list(&self) -> &Arc<Value> {
        &self.lists.resources
    }

    /// `resources/templates/list` items, serialised once.
    pub fn templates_list(&self) -> &Arc<Value> {
        &self.lists.templates
    }

    /// This catalog with only what `allow` names, custom methods kept: what a grant-limited
    /// principal sees and may call. Its lists are built anew, so callers cache it (see
    /// `TenantView::catalog_for`).
    pub fn restricted_to(&self, allow: &Allow) -> Catalog {
        self.filtered(allow, true)
    }

    /// This catalog without what `names` lists (a tenant's disabled tools, prompts and
    /// resources); custom methods stay.
    pub fn excluding(&self, names: &Allow) -> Catalog {
        self.filtered(names, false)
    }

    /// Keeps the entries `names` lists (`listed`), or those it does not.
    fn filtered(&self, names: &Allow, listed: bool) -> Catalog {
        let mut builder = self.to_builder();
        builder
            .tools
            .retain(|t| names.tools.contains(&t.descriptor().name) == listed);
        builder
            .prompts
            .retain(|p| names.prompts.contains(&p.descriptor().name) == listed);
        builder
            .resources
            .retain(|r| names.resources.contains(&r.descriptor().uri) == listed);
        builder
            .templates
            .retain(|t| names.resources.contains(&t.descriptor().uri_template) == listed);
        builder.build()
    }

    /// A builder holding everything in this catalog, to extend or trim it.
    pub fn to_builder(&self) -> CatalogBuilder {
        CatalogBuilder {
            tools: self.tools.iter().map(|e| e.tool.clone()).collect(),
            prompts: self.prompts.clone(),
            resources: self.resources.clone(),
            templates: self.templates.iter().map(|(t, _)| t.clone()).collect(),
            methods: self.methods.clone(),
        }
    }
}

/// Collects a catalog's entries in order; [`CatalogBuilder::build`] resolves duplicate names
/// (first wins) and serialises the lists.
#[derive(Default)]
pub struct CatalogBuilder {
    tools: Vec<Arc<dyn Tool>>,
    prompts: Vec<Arc<dyn Prompt>>,
    resources: Vec<Arc<dyn Resource>>,
    templates: Vec<Arc<dyn ResourceTemplate>>,
    methods: Vec<Arc<dyn MethodHandler>>,
}

impl std::fmt::Debug for CatalogBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogBuilder")
            .field("tools", &self.tools.len())
            .field("prompts", &self.prompts.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("methods", &self.methods.len())
            .finish()
    }
}

impl CatalogBuilder {
    /// Adds a tool (listed in insertion order).
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, prompt: Arc<dyn Prompt>) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Adds a concrete resource, served at its descriptor's URI.
    pub fn resource(mut self, resource: Arc<dyn Resource>) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template, serving every URI its pattern matches.
    pub fn template(mut self, template: Arc<dyn ResourceTemplate>) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a custom (extension) method; a name MCP defines or reserves is refused at build
    /// time with an error log.
    pub fn method(mut self, handler: Arc<dyn MethodHandler>) -> Self {
        self.methods.push(handler);
        self
    }

    /// Everything of `other` appended after what is here.
    pub fn merge(mut self, other: &Catalog) -> Self {
        let more = other.to_builder();
        self.tools.extend(more.tools);
        self.prompts.extend(more.prompts);
        self.resources.extend(more.resources);
        self.templates.extend(more.templates);
        self.methods.extend(more.methods);
        self
    }

    /// Drops the tool named `name`.
    pub fn without_tool(mut self, name: &str) -> Self {
        self.tools.retain(|t| t.descriptor().name != name);
        self
    }

    /// Drops the prompt named `name`.
    pub fn without_prompt(mut self, name: &str) -> Self {
        self.prompts.retain(|p| p.descriptor().name != name);
        self
    }

    /// Builds the catalog. A later entry with a name already taken is ignored, so merging
    /// catalogs is first-wins and lists never show duplicates.
    pub fn build(self) -> Catalog {
        let mut c = Catalog::default();
        for tool in self.tools {
            let descriptor = tool.descriptor();
            if c.tool_index.contains_key(descriptor.name.as_str()) {
                continue;
            }
            c.tool_index
                .insert(Arc::from(descriptor.name.as_str()), c.tools.len());
            let header_params = descriptor.header_params();
            if !header_params.is_empty() {
                c.mirroring.push(c.tools.len());
            }
            c.tools.push(Arc::new(ToolEntry {
                tool,
                descriptor,
                header_params,
            }));
        }
        for prompt in self.prompts {
            let name = prompt.descriptor().name;
            if c.prompt_index.contains_key(name.as_str()) {
                continue;
            }
            c.prompt_index.insert(Arc::from(name), c.prompts.len());
            c.prompts.push(prompt);
        }
        for resource in self.resources {
            let uri = resource.descriptor().uri;
            if c.resource_index.contains_key(uri.as_str()) {
                continue;
            }
            c.resource_index.insert(Arc::from(uri), c.resources.len());
            c.resources.push(resource);
        }
        for template in self.templates {
            let pattern = UriTemplate::parse(&template.descriptor().uri_template);
            if c.template_by_pattern(&pattern.source).is_none() {
                c.templates.push((template, pattern));
            }
        }
        for m in self.methods {
            let name = m.method();
            if is_reserved(name) {
                tracing::error!(
                    method = name,
                    "a custom method may not take a name MCP defines; ignored"
                );
            } else if c.method(name).is_none() {
                c.methods.push(m);
            }
        }
        c.lists = Lists {
            tools: Arc::new(Value::Array(
                c.tools.iter().map(|e| to_value(&e.descriptor)).collect(),
            )),
            prompts: Arc::new(Value::Array(
                c.prompts
                    .iter()
                    .map(|p| to_value(&p.descriptor()))
                    .collect(),
            )),
            resources: Arc::new(Value::Array(
                c.resources
                    .iter()
                    .map(|r| to_value(&r.descriptor()))
                    .collect(),
            )),
            templates: Arc::new(Value::Array(
                c.templates
                    .iter()
                    .map(|(t, _)| to_value(&t.descriptor()))
                    .collect(),
            )),
        };
        c
    }
}

/// Names a custom method may not take: every method MCP defines or removed (so a catalog
/// cannot shadow the runtime's own answers), and anything under the reserved `notifications/`
/// prefix. Extensions use their own names (`com.example/…`), or those their spec gives
/// (`tasks/get`, `tasks/update`, `tasks/cancel` stay free for the tasks extension).
fn is_reserved(method: &str) -> bool {
    // The methods a server sends, beside those it answers (which `Method` knows).
    const SENT: &[&str] = &["elicitation/create", "sampling/createMessage"];
    const PREFIXES: &[&str] = &[
        "tools/",
        "prompts/",
        "resources/",
        "roots/",
        "notifications/",
    ];
    Method::is_known(method)
        || SENT.contains(&method)
        || PREFIXES.iter().any(|p| method.starts_with(p))
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// RFC 6570 level-1 matching: literal text, and `{name}` standing for one non-empty segment
/// without `/`.
#[derive(Debug, Clone)]
struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriTemplate {
    fn parse(source: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            parts.push(Part::Var(rest[open + 1..open + close].to_owned()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Self {
            source: source.to_owned(),
            parts,
        }
    }

    fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Items;

    #[async_trait::async_trait(?Send)]
    impl ResourceTemplate for Items {
        fn descriptor(&self) -> crate::handler::TemplateDescriptor {
            crate::handler::TemplateDescriptor::new("x://items/{id}", "items", "text/plain")
        }

        async fn read(
            &self,
            _ctx: crate::handler::Context,
            _uri: &str,
            _vars: TemplateVars,
        ) -> crate::handler::ResourceOutcome {
            Err(crate::handler::HandlerError::Internal(
                "not read in this test".into(),
            ))
        }
    }

    #[test]
    fn a_catalog_mirrors_params_only_while_one_of_its_tools_does() {
        let tool = |name: &str, schema: serde_json::Value| {
            crate::handler::fn_tool(
                crate::handler::ToolDescriptor::new(name, "A tool.", schema),
                |_ctx, _args| async {
                    Ok(crate::protocol::result::CallToolResult::text("").into())
                },
            )
        };
        let mirrored = tool(
            "mirrored",
            serde_json::json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }}),
        );
        let plain = tool("plain", serde_json::json!({"type": "object"}));
        let both = Catalog::builder()
            .tool(mirrored)
            .tool(plain.clone())
            .build();
        let without = Allow::default().tools(["mirrored"]);

        assert!(both.mirrors_params());
        assert!(!Catalog::builder().tool(plain).build().mirrors_params());
        assert!(!both.excluding(&without).mirrors_params());
        let plain_only = Allow::default().tools(["plain"]);
        assert!(!both.restricted_to(&plain_only).mirrors_params());
    }

    fn mirroring_tool(name: &str) -> Arc<dyn Tool> {
        crate::handler::fn_tool(
            crate::handler::ToolDescriptor::new(
                name,
                "A tool.",
                serde_json::json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}
                }}),
            ),
            |_ctx, _args| async { Ok(crate::protocol::result::CallToolResult::text("").into()) },
        )
    }

    #[test]
    fn the_header_params_of_a_tool_are_found_by_name_among_few_or_many_mirroring_tools() {
        for count in [1, MIRRORING_SCAN_MAX + 1] {
            let plain = crate::handler::fn_tool(
                crate::handler::ToolDescriptor::no_args("plain", "Mirrors nothing."),
                |_ctx, _args| async {
                    Ok(crate::protocol::result::CallToolResult::text("").into())
                },
            );
            let c = (0..count)
                .fold(Catalog::builder().tool(plain), |b, i| {
                    b.tool(mirroring_tool(&format!("mirrored-{i}")))
                })
                .build();

            for i in [0, count / 2, count - 1] {
                let params = c.header_params(&format!("mirrored-{i}"));
                assert_eq!(params.len(), 1, "tool {i} of {count} mirroring tools");
                assert_eq!(params[0].property, "region");
            }
            assert!(c.header_params("plain").is_empty());
            assert!(c.header_params("absent").is_empty());
        }
    }

    #[test]
    fn a_target_the_catalog_has_is_named_by_its_own_shared_copy() {
        let echo = crate::handler::fn_tool(
            crate::handler::ToolDescriptor::no_args("echo", "Echoes."),
            |_ctx, _args| async { Ok(crate::protocol::result::CallToolResult::text("").into()) },
        );
        let c = Catalog::builder().tool(echo).build();

        let first = c
            .target_name(&Method::ToolsCall, "echo")
            .expect("a tool it has");
        let second = c
            .target_name(&Method::ToolsCall, "echo")
            .expect("a tool it has");
        assert_eq!(&*first, "echo");
        assert!(Arc::ptr_eq(&first, &second), "shared, not copied");
        assert_eq!(c.target_name(&Method::ToolsCall, "other"), None);
        assert_eq!(c.target_name(&Method::PromptsGet, "echo"), None);
    }

    #[test]
    fn a_template_added_twice_is_listed_once() {
        let c = Catalog::builder()
            .template(Arc::new(Items))
            .template(Arc::new(Items))
            .build();
        assert_eq!(c.templates_list().as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn excluding_drops_exactly_what_restricting_keeps() {
        let c = Catalog::builder().template(Arc::new(Items)).build();
        let items = Allow::default().resources(["x://items/{id}"]);
        assert_eq!(
            c.excluding(&items)
                .templates_list()
                .as_array()
                .map(Vec::len),
            Some(0)
        );
        assert_eq!(
            c.restricted_to(&items)
                .templates_list()
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let other = Allow::default().resources(["x://other"]);
        assert_eq!(
            c.excluding(&other)
                .templates_list()
                .as_array()
                .map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn custom_methods_cannot_take_names_mcp_defines() {
        for reserved in [
            "ping",
            "initialize",
            "tools/list",
            "tasks/result",
            "tasks/list",
            "notifications/x",
            "server/discover",
            "subscriptions/listen",
            "completion/complete",
            "logging/setLevel",
            "elicitation/create",
            "sampling/createMessage",
        ] {
            assert!(is_reserved(reserved), "{reserved}");
        }
        for free in ["acme/report", "com.example/sync", "tasks/get"] {
            assert!(!is_reserved(free), "{free}");
        }
    }

    #[test]
    fn a_template_variable_matches_one_segment() {
        let t = UriTemplate::parse("test://template/{id}/data");
        assert_eq!(
            t.matches("test://template/123/data")
                .and_then(|v| v.get("id").cloned())
                .as_deref(),
            Some("123")
        );
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/123/data/x").is_none());
    }
}
