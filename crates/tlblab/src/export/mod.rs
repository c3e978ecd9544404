//! Result sets in other tools' formats: `tidy` (one row per run: `runs.csv`, and the Python
//! API's DataFrames) and `mmtests` (mmtests' own `work/log` tree, read by its unmodified
//! `compare-kernels.sh`).

pub mod mmtests;
pub mod tidy;

#[cfg(test)]
mod test_set;
