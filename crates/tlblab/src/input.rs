//! Reading the files a user hands tlblab. Every one goes through [`read_text`]: a size cap
//! (`/dev/zero` or a runaway file is refused after the cap, not read until memory runs out),
//! UTF-8, and a one-line error naming the file.

use anyhow::{anyhow, bail, Context, Result};
use std::io::Read;
use std::path::Path;

/// The cap of a TOML file (machine profile, kernel preset, experiment, layout): the largest
/// shipped one is under 64 KiB.
pub const TEXT_LIMIT: u64 = 16 << 20;
/// The cap of a results file (`summary.json`, a cell file of every run of one cell).
pub const RESULT_LIMIT: u64 = 1 << 30;

/// The text of `path`, a `what` (e.g. "machine profile"), at most `limit` bytes.
pub fn read_text(path: &Path, what: &str, limit: u64) -> Result<String> {
    let name = path.display();
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {what} {name}"))?;
    let too_big = || anyhow!("{what} {name}: larger than {} MiB, the limit for a {what}", limit >> 20);
    // A regular file says its size; a device or pipe is read up to one byte past the cap.
    if f.metadata().is_ok_and(|m| m.is_file() && m.len() > limit) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    f.take(limit + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {what} {name}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => bail!("{what} {name}: not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_oversized_files_are_refused_at_the_cap() {
        let e = read_text(Path::new("/dev/zero"), "machine profile", 1 << 20).unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("larger than 1 MiB"), "{e}");
        let dir = std::env::temp_dir().join(format!("tlblab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("big.toml");
        std::fs::write(&p, vec![b'#'; (1 << 20) + 1]).unwrap();
        assert!(read_text(&p, "kernel preset", 1 << 20).unwrap_err().to_string().contains("larger than"));
        std::fs::write(&p, b"a = 1\n\xff\n").unwrap();
        let e = read_text(&p, "kernel preset", 1 << 20).unwrap_err().to_string();
        assert!(e.contains("not UTF-8") && e.contains("byte 6"), "{e}");
        std::fs::write(&p, b"a = 1\n").unwrap();
        assert_eq!(read_text(&p, "kernel preset", 1 << 20).unwrap(), "a = 1\n");
        std::fs::remove_dir_all(&dir).ok();
    }
}
