//! Who calls the admin API: middleware on the `/admin/v1` scope resolves the bearer token to a
//! [`Caller`] (the operator, or a tenant's admin key) and refuses everyone else; handlers take
//! the [`Caller`] as an extractor and ask it what it may do.

use std::future::{ready, Ready};

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::problem::Problem;
use super::AdminApi;
use crate::registry::AdminLookup;

/// The operator's token, kept as its SHA-256: compared in constant time whatever the length
/// of what is presented.
#[derive(Clone)]
pub struct OperatorToken([u8; 32]);

impl std::fmt::Debug for OperatorToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OperatorToken(<redacted>)")
    }
}

impl OperatorToken {
    /// The operator token `secret` (`ROUNDTRIP_ADMIN_TOKEN`).
    pub fn new(secret: &str) -> OperatorToken {
        OperatorToken(Sha256::digest(secret.as_bytes()).into())
    }

    fn matches(&self, presented: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        self.0.ct_eq(&presented).into()
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The operator: every tenant, every action.
    Operator,
    /// A tenant-admin key: its own tenant only.
    TenantAdmin {
        /// The key's tenant.
        tenant: String,
        /// The key's principal (`key:{id}`).
        principal: String,
    },
}

impl Caller {
    /// Who, as the audit log names them.
    pub fn actor(&self) -> &str {
        match self {
            Caller::Operator => "operator",
            Caller::TenantAdmin { principal, .. } => principal,
        }
    }

    /// May the caller act on tenant `slug`? (Refused without saying whether it exists.)
    pub fn may_manage(&self, slug: &str) -> Result<(), Problem> {
        match self {
            Caller::Operator => Ok(()),
            Caller::TenantAdmin { tenant, .. } if tenant == slug => Ok(()),
            Caller::TenantAdmin { .. } => Err(Problem::forbidden(
                "A tenant-admin key manages its own tenant only",
            )),
        }
    }

    /// Only the operator may do `what`.
    pub fn must_be_operator(&self, what: &str) -> Result<(), Problem> {
        match self {
            Caller::Operator => Ok(()),
            Caller::TenantAdmin { .. } => {
                Err(Problem::forbidden(format!("Only the operator may {what}")))
            }
        }
    }
}

impl FromRequest for Caller {
    type Error = Problem;
    type Future = Ready<Result<Caller, Problem>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        // Set by `authenticate`, which every admin route but the document sits behind.
        ready(
            req.extensions()
                .get::<Caller>()
                .cloned()
                .ok_or_else(Problem::unauthorized),
        )
    }
}

/// The `/admin/v1` scope's middleware: a bearer token, exactly one `Authorization` header,
/// resolved to a [`Caller`] before the handler runs. A key without the `tenant-admin` scope
/// (an `mcp` key) gets 403; anything else unknown 401.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let caller = {
        let api = req
            .app_data::<web::Data<AdminApi>>()
            .ok_or_else(Problem::unavailable)?;
        let mut values = req.headers().get_all(header::AUTHORIZATION);
        let bearer = match (values.next(), values.next()) {
            (Some(value), None) => value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim),
            _ => None,
        };
        let bearer = bearer
            .filter(|b| !b.is_empty())
            .ok_or_else(Problem::unauthorized)?;
        resolve(api, bearer)?
    };
    req.extensions_mut().insert(caller);
    next.call(req).await
}

fn resolve(api: &AdminApi, bearer: &str) -> Result<Caller, Problem> {
    if api.operator.as_ref().is_some_and(|t| t.matches(bearer)) {
        return Ok(Caller::Operator);
    }
    match api.registry.admin_key(bearer) {
        AdminLookup::Admin(key) => Ok(Caller::TenantAdmin {
            tenant: key.tenant,
            principal: key.principal,
        }),
        AdminLookup::NotAdmin => Err(Problem::forbidden(
            "This key has no tenant-admin scope: it may call the MCP endpoint only",
        )),
        AdminLookup::Unknown => Err(Problem::unauthorized()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_token_matches_only_itself() {
        let token = OperatorToken::new("s3cret");
        assert!(token.matches("s3cret"));
        assert!(!token.matches("s3cre"));
        assert!(!token.matches(""));
    }

    #[test]
    fn its_debug_shows_nothing() {
        assert!(!format!("{:?}", OperatorToken::new("s3cret")).contains("s3cret"));
    }

    #[test]
    fn a_tenant_admin_manages_its_own_tenant_only() {
        let caller = Caller::TenantAdmin {
            tenant: "a1".into(),
            principal: "key:k".into(),
        };
        assert!(caller.may_manage("a1").is_ok());
        assert!(caller.may_manage("b2").is_err());
        assert!(caller.must_be_operator("create tenants").is_err());
        assert!(Caller::Operator.may_manage("b2").is_ok());
    }
}
