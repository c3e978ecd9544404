//! The `tlblab` library: everything the command does, callable from Rust (and from Python through
//! `crates/tlblab-py`). The binary (`main.rs`) only parses arguments and reports errors.
//!
//! - [`cmd`]: one module per subcommand (its clap arguments and its `run`);
//! - [`spec`]: what to run (machine, workload, kernel, intervals), its defaults and parsers;
//! - [`machines`]: built-in and file machine profiles;
//! - [`experiment`]: the seed reproductions of `experiments/*.toml`;
//! - [`results`]: running cells of runs in parallel through the results store, loading result
//!   sets;
//! - [`store`]: atomic writes into a results directory that several processes may share;
//! - [`export`]: result sets as mmtests `work/log` trees and tidy CSV;
//! - [`timeline`]: a run's timeline as Chrome trace-event JSON (`run --timeline`), and its checker;
//! - [`trace`]: address-trace readers;
//! - [`input`]: every file a user gives, read through one size-capped reader;
//! - [`host`]: a run's host-memory estimate against what the host has left;
//! - [`fuzz`]: every parser of a user's file as a fuzz target (`scripts/fuzz.sh`).

pub mod cmd;
pub mod experiment;
pub mod export;
pub mod fuzz;
pub mod host;
pub mod input;
pub mod machines;
pub mod results;
pub mod spec;
pub mod store;
pub mod timeline;
pub mod trace;
