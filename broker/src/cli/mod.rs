//! Subcommands of the `broker` binary besides running the broker.

pub mod scram;
