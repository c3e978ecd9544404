//! Embeds every `kernels/*.toml` (the built-in kernel presets) so the model knows them without
//! reading files at run time. Presets are listed in version order (3.4 before 3.13).
use std::{env, fs, path::PathBuf};

/// `3.13-nowalk` -> ([3, 13], "-nowalk"): numeric version components, then the rest.
fn version_key(stem: &str) -> (Vec<u64>, String) {
    let end = stem.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(stem.len());
    let nums = stem[..end].split('.').filter_map(|n| n.parse().ok()).collect();
    (nums, stem[end..].to_string())
}

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../kernels");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    files.sort_by_key(|f| version_key(&f.file_stem().unwrap().to_string_lossy()));
    let mut out = String::from("/// (name, TOML text) of every built-in preset, in version order.\n");
    out.push_str("pub const BUILTIN: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let stem = f.file_stem().unwrap().to_string_lossy();
        let abs = fs::canonicalize(f).unwrap();
        out.push_str(&format!("    ({stem:?}, include_str!({:?})),\n", abs.display().to_string()));
    }
    out.push_str("];\n");
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("builtin_kernels.rs"), out).unwrap();
}
