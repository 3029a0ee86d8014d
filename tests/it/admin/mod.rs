//! The tenant admin API and what it changes on the MCP endpoint: who may do what, tenants and
//! keys through the API, isolation between tenants and keys, live changes, rate limits (in
//! the process, and in Redis for a fleet: `redis_limits`) and the audit log; the OpenAPI
//! document, and the edges of what the API reads that schemathesis found (`edges`).

mod access;
mod audit;
mod document;
mod edges;
mod isolation;
mod keys;
mod limits;
mod live;
mod redis_limits;
mod tenants;
