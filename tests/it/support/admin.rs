//! The admin API from a test: requests to `/admin/v1/...` as the operator or with a key, and
//! their problem+json or JSON answers; keys and tenants made through the API, as an operator
//! would make them.

use awc::http::Method;
use serde_json::{json, Value};

use super::replies::Reply;
use super::requests::Req;
use super::server::Server;

/// The operator token of every test server (`admin_token`).
pub(crate) const OPERATOR: &str = "rt_test_operator_0123456789";

impl Server {
    /// `method` on `/admin/v1{path}` with no credentials.
    pub(crate) fn admin_anonymous(&self, method: Method, path: &str) -> Req<'_> {
        self.http(method, &format!("/admin/v1{path}"))
    }

    /// `method` on `/admin/v1{path}` as `token`.
    pub(crate) fn admin_as(&self, token: &str, method: Method, path: &str) -> Req<'_> {
        self.admin_anonymous(method, path).bearer(token)
    }

    /// `method` on `/admin/v1{path}` as the operator.
    pub(crate) fn admin(&self, method: Method, path: &str) -> Req<'_> {
        self.admin_as(OPERATOR, method, path)
    }

    /// Creates a tenant through the API: `{"slug", "name", "catalogs", "auth"}` and `extra`.
    pub(crate) async fn create_tenant(
        &self,
        slug: &str,
        catalog: &str,
        auth: &str,
        extra: Value,
    ) -> Value {
        let mut body = json!({"slug": slug, "name": slug, "catalogs": [catalog], "auth": auth});
        if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        let reply = self
            .admin(Method::POST, "/tenants")
            .json(&body)
            .send_unchecked()
            .await;
        assert_eq!(reply.status, 201, "creating {slug}: {reply:?}");
        reply.problem_or_json()
    }

    /// Issues a key of `tenant` through the API (`body`: scopes, allow, expires_at); returns
    /// `(id, secret)`.
    pub(crate) async fn create_key(&self, tenant: &str, body: Value) -> (String, String) {
        let reply = self
            .admin(Method::POST, &format!("/tenants/{tenant}/keys"))
            .json(&body)
            .send_unchecked()
            .await;
        assert_eq!(reply.status, 201, "a key of {tenant}: {reply:?}");
        let key = reply.problem_or_json();
        let field = |name: &str| key[name].as_str().expect("a string").to_owned();
        (field("id"), field("secret"))
    }
}

impl Req<'_> {
    /// A body of any bytes (no content type set).
    pub(crate) fn bytes(mut self, body: impl Into<actix_web::web::Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// A JSON body.
    pub(crate) fn json(mut self, body: &Value) -> Self {
        self.body = serde_json::to_vec(body).expect("serialisable").into();
        self.header("content-type", "application/json")
    }
}

impl Reply {
    /// The body of an admin API answer: JSON, or a problem (`application/problem+json`,
    /// checked to carry its status).
    pub(crate) fn problem_or_json(&self) -> Value {
        let body: Value = serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"));
        if self.status >= 400 {
            assert_eq!(self.content_type(), "application/problem+json", "{self:?}");
            assert_eq!(body["status"], self.status, "{self:?}");
            assert!(body["detail"].is_string(), "{self:?}");
        } else {
            assert!(
                self.content_type().starts_with("application/json"),
                "{self:?}"
            );
        }
        body
    }

    /// The problem of a refused admin request, after checking its status.
    pub(crate) fn problem(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "expected HTTP {status}: {self:?}");
        self.problem_or_json()
    }
}
