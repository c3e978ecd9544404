//! Embeds every `profiles/*.toml` and `experiments/*.toml` so the built-in machines and
//! experiments work from any directory.
use std::{env, fs, path::PathBuf};

fn embed(dir: &str, constant: &str, out: &mut String) {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..").join(dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    files.sort();
    out.push_str(&format!("pub const {constant}: &[(&str, &str)] = &[\n"));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let stem = f.file_stem().unwrap().to_string_lossy();
        let abs = fs::canonicalize(f).unwrap();
        out.push_str(&format!("    ({stem:?}, include_str!({:?})),\n", abs.display().to_string()));
    }
    out.push_str("];\n");
}

fn main() {
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut profiles = String::new();
    embed("profiles", "BUILTIN", &mut profiles);
    fs::write(out_dir.join("builtin_profiles.rs"), profiles).unwrap();
    let mut experiments = String::new();
    embed("experiments", "BUILTIN_EXPERIMENTS", &mut experiments);
    fs::write(out_dir.join("builtin_experiments.rs"), experiments).unwrap();
}
