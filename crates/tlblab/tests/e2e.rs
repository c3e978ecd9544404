//! The end-to-end tests of the `tlblab` binary and library, one module per file beside this one
//! (each file's first lines say what it covers), built as one test binary.

mod common;

mod bad_input;
mod citations;
mod cli;
mod dd_tmpfs;
mod ebizzy;
mod fsmark_tmpfs;
mod fuzz_corpus;
mod native;
mod pycachesim_crosscheck;
mod report;
mod seed003;
mod seed_claims;
mod shard;
mod timeline;
