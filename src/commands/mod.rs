//! One module per subcommand (`call` holds the three client commands: call, prompt, read).

pub mod bench;
pub mod call;
pub mod conformance_client;
pub mod serve;
pub mod stdio;
