//! One module per subcommand.

pub mod bench;
pub mod serve;
pub mod stdio;
