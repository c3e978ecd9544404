//! One module per subcommand: each parses nothing itself (clap does) and hands off to the model.

pub mod advise;
pub mod check;
pub mod compare;
pub mod export;
pub mod layout;
pub mod list;
pub mod native;
pub mod probe;
pub mod reach;
pub mod reproduce;
pub mod run;
pub mod sweep;
pub mod trace;
pub mod validate;
