//! One module per subcommand (`call` holds the three client commands: call, prompt, read;
//! `tenant` the store's tenants and keys).

pub mod bench;
pub mod call;
pub mod conformance_client;
pub mod migrate;
pub mod serve;
pub mod stdio;
pub mod tenant;
