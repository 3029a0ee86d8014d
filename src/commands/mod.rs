//! One module per subcommand.

pub mod bench;
pub mod conformance_client;
pub mod serve;
pub mod stdio;
