//! Transports: how requests arrive and responses leave. They parse and frame; every decision
//! about a request is dispatch's.

pub mod http;
pub mod stdio;
