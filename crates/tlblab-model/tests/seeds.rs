//! The model's seed tests, one module per file beside this one, built as one test binary.

mod seed_002_model;
mod seed_004_mechanism;
