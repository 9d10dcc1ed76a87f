//! The command line: argv into plain options ([`args`], the only module that knows clap),
//! and the dispatch of a parsed command to its report on the terminal ([`dispatch`]).

pub mod args;
pub mod dispatch;

pub use args::main;
