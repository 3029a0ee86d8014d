//! One module per subcommand.

pub mod answer_input;
pub mod bench;
pub mod conformance_client;
pub mod serve;
pub mod stdio;
