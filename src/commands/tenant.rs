//! `roundtrip tenant …` and `roundtrip key …`: the store's tenants and keys from a shell, with
//! the admin API's rules (the same checks, the same JSON with `--json`) and its audit records
//! (actor `cli`). A running server follows the store, so a change here reaches it within
//! `tenants.follow_ms`.

use std::io::Write;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _};
use roundtrip_tenants::admin::bodies::{parse_rfc3339, KeyBody, KeyCreated, TenantBody};
use roundtrip_tenants::audit::AuditEvent;
use roundtrip_tenants::catalogs::check_spec;
use roundtrip_tenants::model::validate_names;
use roundtrip_tenants::{
    ApiKey, AuthMode, Millis, Names, Scope, Slug, Status, Store, TenantRecord, TenantSpec,
};
use serde::Serialize;

use crate::catalogs::Compiled;
use crate::cli::{AuthArg, KeyArgs, KeyCommand, ScopeArg, TenantArgs, TenantCommand};
use crate::config::Config;
use crate::wiring;

/// Who the audit log says made a change from the command line.
const ACTOR: &str = "cli";

/// Pages read when listing.
const PAGE: u32 = 500;

pub async fn tenant(config: &Config, args: &TenantArgs) -> anyhow::Result<()> {
    let store = wiring::open_store(config).await?;
    let out = Out(args.json);
    match &args.command {
        TenantCommand::Create {
            slug,
            name,
            catalogs,
            auth,
            instructions,
        } => {
            let slug = Slug::parse(slug)?;
            let auth = match auth {
                AuthArg::ApiKey => AuthMode::ApiKey,
                AuthArg::Anonymous => AuthMode::Anonymous,
            };
            let name = name.clone().unwrap_or_else(|| slug.as_str().to_owned());
            let mut spec = TenantSpec::new(name, catalogs.clone(), auth);
            spec.instructions = instructions.clone();
            check_spec(&Compiled, &spec)?;
            let record = store.create_tenant(&slug, &spec).await?;
            audit(&store, &slug, "tenant.create", None).await;
            out.tenant(&record)
        }
        TenantCommand::List => {
            let mut all = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = store.tenants(after.as_deref(), PAGE).await?;
                let full = page.len() == PAGE as usize;
                after = page.last().map(|r| r.slug.as_str().to_owned());
                all.extend(page);
                if !full {
                    break;
                }
            }
            out.tenants(&all)
        }
        TenantCommand::Show { slug } => out.tenant(&existing(&store, slug).await?),
        TenantCommand::Suspend { slug } => {
            set_status(&store, &out, slug, Status::Suspended, "tenant.suspend").await
        }
        TenantCommand::Resume { slug } => {
            set_status(&store, &out, slug, Status::Active, "tenant.resume").await
        }
        TenantCommand::Delete { slug } => {
            let record = existing(&store, slug).await?;
            store.delete_tenant(slug).await?;
            audit(&store, &record.slug, "tenant.delete", None).await;
            out.done(&format!("deleted tenant {slug}"))
        }
    }
}

pub async fn key(config: &Config, args: &KeyArgs) -> anyhow::Result<()> {
    let store = wiring::open_store(config).await?;
    let out = Out(args.json);
    match &args.command {
        KeyCommand::Create {
            tenant,
            scopes,
            tools,
            prompts,
            resources,
            expires_at,
        } => {
            let record = existing(&store, tenant).await?;
            let allow = Names {
                tools: tools.iter().cloned().collect(),
                prompts: prompts.iter().cloned().collect(),
                resources: resources.iter().cloned().collect(),
            };
            validate_names("allow", &allow)?;
            let now = Millis::now();
            let expires_at = expires_at
                .as_deref()
                .map(|at| parse_rfc3339("--expires-at", at).map_err(|p| anyhow!("{p}")))
                .transpose()?;
            if expires_at.is_some_and(|at| at <= now) {
                bail!("--expires-at must be in the future");
            }
            let scopes = if scopes.is_empty() {
                vec![Scope::Mcp]
            } else {
                scopes
                    .iter()
                    .map(|s| match s {
                        ScopeArg::Mcp => Scope::Mcp,
                        ScopeArg::TenantAdmin => Scope::TenantAdmin,
                    })
                    .collect()
            };
            let key = ApiKey::new_random();
            let mut stored = key.record().with_scopes(scopes);
            stored.allow = (!allow.is_empty()).then_some(allow);
            stored.expires_at = expires_at;
            store.create_key(record.slug.as_str(), &stored).await?;
            audit(&store, &record.slug, "key.create", Some(&stored.id)).await;
            let created = KeyCreated {
                key: KeyBody::of(record.slug.as_str(), &stored, now),
                secret: key.secret,
            };
            if out.0 {
                return out.json(&created);
            }
            out.done(&format!(
                "key {} of {}\nsecret (shown once): {}",
                created.key.id, created.key.tenant, created.secret
            ))
        }
        KeyCommand::List { tenant } => {
            let record = existing(&store, tenant).await?;
            let now = Millis::now();
            let mut all = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = store
                    .keys(record.slug.as_str(), after.as_deref(), PAGE)
                    .await?;
                let full = page.len() == PAGE as usize;
                after = page.last().map(|k| k.id.clone());
                all.extend(page.iter().map(|k| KeyBody::of(tenant, k, now)));
                if !full {
                    break;
                }
            }
            out.keys(&all)
        }
        KeyCommand::Revoke { tenant, id } => {
            let record = existing(&store, tenant).await?;
            if !store.revoke_key(tenant, id, Millis::now()).await? {
                bail!("tenant {tenant} has no live key {id}");
            }
            audit(&store, &record.slug, "key.revoke", Some(id)).await;
            out.done(&format!("revoked key {id} of {tenant}"))
        }
    }
}

async fn existing(store: &Arc<dyn Store>, slug: &str) -> anyhow::Result<TenantRecord> {
    store
        .tenant(slug)
        .await?
        .with_context(|| format!("no tenant {slug:?}"))
}

async fn set_status(
    store: &Arc<dyn Store>,
    out: &Out,
    slug: &str,
    status: Status,
    action: &str,
) -> anyhow::Result<()> {
    let record = existing(store, slug).await?;
    let updated = store
        .update_tenant(slug, &record.spec, status)
        .await?
        .with_context(|| format!("no tenant {slug:?}"))?;
    audit(store, &record.slug, action, None).await;
    out.tenant(&updated)
}

/// Records a change; a failure to record does not undo it, and is said.
async fn audit(store: &Arc<dyn Store>, tenant: &Slug, action: &str, target: Option<&str>) {
    let event = AuditEvent::admin(tenant, ACTOR, action, target);
    if let Err(e) = store.append_audit(&[event]).await {
        eprintln!("roundtrip: the change was made, but recording it in the audit log failed: {e}");
    }
}

/// How results are printed: text for people, or `--json`.
struct Out(bool);

impl Out {
    fn json(&self, value: &impl Serialize) -> anyhow::Result<()> {
        let text = serde_json::to_string(value)?;
        self.line(&text)
    }

    fn line(&self, text: &str) -> anyhow::Result<()> {
        writeln!(std::io::stdout().lock(), "{text}")?;
        Ok(())
    }

    fn done(&self, text: &str) -> anyhow::Result<()> {
        if self.0 {
            return self.json(&serde_json::json!({ "done": text }));
        }
        self.line(text)
    }

    fn tenant(&self, record: &TenantRecord) -> anyhow::Result<()> {
        let body = TenantBody::from(record);
        if self.0 {
            return self.json(&body);
        }
        self.line(&format!(
            "{}  {}  {}  auth={}  catalogs={}  endpoint={}",
            body.slug,
            body.status.as_str(),
            body.name,
            body.auth.as_str(),
            body.catalogs.join(","),
            body.endpoint
        ))
    }

    fn tenants(&self, records: &[TenantRecord]) -> anyhow::Result<()> {
        if self.0 {
            let bodies: Vec<TenantBody> = records.iter().map(TenantBody::from).collect();
            return self.json(&bodies);
        }
        records.iter().try_for_each(|r| self.tenant(r))
    }

    fn keys(&self, keys: &[KeyBody]) -> anyhow::Result<()> {
        if self.0 {
            return self.json(&keys);
        }
        keys.iter().try_for_each(|k| {
            let scopes: Vec<&str> = k.scopes.iter().map(|s| s.as_str()).collect();
            self.line(&format!(
                "{}  {}  scopes={}  {}expires={}",
                k.id,
                k.state,
                scopes.join(","),
                if k.allow.is_some() { "limited  " } else { "" },
                k.expires_at.as_deref().unwrap_or("never")
            ))
        })
    }
}
