//! tlblab-report: statistics and reports over tlblab results, the way kernel developers read them.
//!
//! - [`stats`]: the mmtests statistics (Amean, Hmean, Gmean, Stddev, CoeffVar, Min, Max, best-95%
//!   means), the percent-better column and Welch's t-test;
//! - [`summary`]: a result set (every iteration of every (kernel, threads) cell) and its
//!   `summary.json`;
//! - [`compare`]: the compare-kernels table and the counters side by side;
//! - [`counters`]: which counters a table prints (those that counted, as `perf stat`);
//! - [`sweep`]: a sweep's grid of varied knobs, its best values and sweep curves;
//! - [`seed_table`]: the seed reproductions' own tables, drawn from each experiment's `[table]`;
//! - [`claims`]: a seed thread's claims as data and their verdicts on a summary;
//! - [`plot`], [`html`], [`report`]: SVG/PNG plots and the HTML page that gathers everything.
//!
//! No file I/O here: builders return text and bytes, the CLI writes them.

pub mod claims;
pub mod compare;
pub mod counters;
pub mod html;
pub mod plot;
pub mod report;
pub mod seed_table;
pub mod stats;
pub mod summary;
pub mod sweep;
pub mod table;
