//! One module per subcommand.

pub mod answer_input;
pub mod bench;
pub mod serve;
pub mod stdio;
