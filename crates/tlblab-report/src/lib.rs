//! tlblab-report: statistics and reports over tlblab results, the way kernel developers read them
//! (mmtests-style comparison tables, plots, an HTML report).
//!
//! The statistics and tables arrive with the results work (issue 5); for now this crate formats
//! the plain tables the CLI prints.

pub mod stats;
pub mod table;
