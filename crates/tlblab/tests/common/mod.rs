//! Helpers shared by the end-to-end tests: run the binary, take its output, list a tree.

use std::path::Path;
use std::process::{Command, Output};

pub fn tlblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tlblab")).args(args).output().expect("run tlblab")
}

/// Standard output of a run that must succeed.
pub fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "tlblab failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Standard error of a run that must fail.
pub fn stderr(o: &Output) -> String {
    assert!(!o.status.success(), "expected failure, got: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Every file under `dir`, relative path -> bytes, sorted.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}
