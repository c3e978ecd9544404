//! Reading address traces.

pub mod reader;
