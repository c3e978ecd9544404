//! Embeds the repository's built-in data (`kernels/`, `profiles/`, `experiments/`, `layouts/`,
//! every `*.toml`) so the model and the command know it without reading files at run time; the
//! one way built-in data enters the binaries (src/builtin.rs). Kernel presets are listed in
//! version order (3.4 before 3.13), the rest by name.
use std::{env, fs, path::PathBuf};

/// `3.13-nowalk` -> ([3, 13], "-nowalk"): numeric version components, then the rest.
fn version_key(stem: &str) -> (Vec<u64>, String) {
    let end = stem.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(stem.len());
    let nums = stem[..end].split('.').filter_map(|n| n.parse().ok()).collect();
    (nums, stem[end..].to_string())
}

fn embed(dir: &str, constant: &str, by_version: bool, out: &mut String) {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..").join(dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    let stem = |f: &PathBuf| f.file_stem().unwrap().to_string_lossy().into_owned();
    if by_version {
        files.sort_by_key(|f| version_key(&stem(f)));
    } else {
        files.sort();
    }
    out.push_str(&format!("pub const {constant}: &[(&str, &str)] = &[\n"));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let abs = fs::canonicalize(f).unwrap();
        out.push_str(&format!("    ({:?}, include_str!({:?})),\n", stem(f), abs.display().to_string()));
    }
    out.push_str("];\n");
}

fn main() {
    let mut out = String::new();
    out.push_str("/// (name, TOML text) of every built-in kernel preset (`kernels/`), in version order.\n");
    embed("kernels", "KERNELS", true, &mut out);
    out.push_str("/// (name, TOML text) of every built-in machine profile (`profiles/`), by name.\n");
    embed("profiles", "PROFILES", false, &mut out);
    out.push_str("/// (name, TOML text) of every seed experiment (`experiments/`), by name.\n");
    embed("experiments", "EXPERIMENTS", false, &mut out);
    out.push_str(
        "/// (name, TOML text) of every shipped MPC8xx text and data layout (`layouts/`), by name.\n",
    );
    embed("layouts", "LAYOUTS", false, &mut out);
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("builtin.rs"), out).unwrap();
}
