//! The saved fuzz corpus (`fuzz/corpus/TARGET/*`: what `scripts/fuzz.sh TARGET SECONDS --merge`
//! kept for its coverage, and every input that once crashed a target) replayed through the fuzz
//! targets of `tlblab::fuzz`: no input may panic, and every rejection is one line naming the
//! file (the targets assert it). No fuzzer is needed for this.

use std::path::Path;

#[test]
fn every_saved_input_runs_through_its_target_without_a_crash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut failed = Vec::new();
    let mut total = 0;
    for (name, target) in tlblab::fuzz::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no saved inputs", dir.display());
        for f in files {
            let data = std::fs::read(&f).unwrap();
            total += 1;
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failed.push(f.display().to_string());
            }
        }
    }
    assert!(failed.is_empty(), "{} of {total} saved inputs crash their target: {failed:?}", failed.len());
    assert!(total >= tlblab::fuzz::TARGETS.len());
}
