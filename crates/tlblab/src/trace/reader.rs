//! Address-trace readers: `raw64` (little-endian u64 addresses), `hex` (one address per line) and
//! `lackey` (valgrind `--tool=lackey --trace-mem=yes`). Gzip input is detected by its magic bytes.
//!
//! Readers stream in large blocks and hand each access to a callback, so a trace of any length
//! runs in constant memory and parsing never allocates per record.

use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use tlblab_model::hw::tlb::AccessKind;

const BLOCK: usize = 1 << 20;
/// The longest line of a text trace (a lackey record is under 40 bytes): a file without
/// newlines (`/dev/zero`) is refused at its first line, not buffered until memory runs out.
pub const MAX_LINE: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Little-endian u64 virtual addresses, one lookup each.
    Raw64,
    /// valgrind lackey output: `I` = instruction fetch, `L` = load, `S` = store, `M` = modify.
    Lackey,
    /// One hexadecimal address per line (`0x` optional; blank lines and `#` comments ignored).
    Hex,
}

/// One memory access of a trace: `size` bytes at `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    pub size: u32,
    pub kind: AccessKind,
}

/// Opens `path` (`-` = standard input), transparently decompressing gzip.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let raw: Box<dyn Read> = if path == Path::new("-") {
        Box::new(io::stdin().lock())
    } else {
        Box::new(File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?)
    };
    Ok(decompressing(raw))
}

/// `raw` buffered, through a gzip decoder if it starts with gzip's magic bytes.
pub fn decompressing<'a>(raw: Box<dyn Read + 'a>) -> Box<dyn BufRead + 'a> {
    let mut buf = BufReader::with_capacity(BLOCK, raw);
    let gz = buf.fill_buf().map(|b| b.starts_with(&[0x1f, 0x8b])).unwrap_or(false);
    if gz {
        Box::new(BufReader::with_capacity(BLOCK, MultiGzDecoder::new(buf)))
    } else {
        Box::new(buf)
    }
}

/// Reads every access of `input` in `format` and passes it to `f`. `name` names the input in
/// errors, which give the line number (text formats) or byte offset (raw64).
pub fn for_each_access(
    input: &mut dyn BufRead,
    format: Format,
    name: &str,
    mut f: impl FnMut(Access),
) -> Result<()> {
    match format {
        Format::Raw64 => read_raw64(input, name, |addr| f(Access { addr, size: 1, kind: AccessKind::Load })),
        Format::Hex => read_lines(input, name, |line| {
            let t = line.trim_ascii();
            if t.is_empty() || t[0] == b'#' {
                return Ok(());
            }
            let addr =
                parse_hex(t).ok_or_else(|| format!("expected a hexadecimal address, found `{}`", show(t)))?;
            f(Access { addr, size: 1, kind: AccessKind::Load });
            Ok(())
        }),
        Format::Lackey => read_lines(input, name, |line| {
            if let Some(a) = parse_lackey(line)? {
                f(a);
            }
            Ok(())
        }),
    }
}

fn read_raw64(input: &mut dyn BufRead, name: &str, mut f: impl FnMut(u64)) -> Result<()> {
    let mut offset: u64 = 0;
    let mut carry = [0u8; 8];
    let mut carried = 0usize;
    loop {
        let buf = input.fill_buf().with_context(|| format!("reading {name}"))?;
        if buf.is_empty() {
            break;
        }
        let mut b = buf;
        // Finish an address split across two reads.
        if carried > 0 {
            let take = (8 - carried).min(b.len());
            carry[carried..carried + take].copy_from_slice(&b[..take]);
            carried += take;
            b = &b[take..];
            if carried == 8 {
                f(u64::from_le_bytes(carry));
                carried = 0;
            }
        }
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            f(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        carry[carried..carried + rest.len()].copy_from_slice(rest);
        carried += rest.len();
        let n = buf.len();
        offset += n as u64;
        input.consume(n);
    }
    if carried != 0 {
        bail!(
            "{name}: raw64 input is {offset} bytes, not a multiple of 8 (a partial address starts at byte {})",
            offset - carried as u64
        );
    }
    Ok(())
}

fn read_lines(
    input: &mut dyn BufRead,
    name: &str,
    mut f: impl FnMut(&[u8]) -> std::result::Result<(), String>,
) -> Result<()> {
    let mut line = Vec::with_capacity(256);
    let mut number = 0u64;
    loop {
        line.clear();
        let n = (&mut *input)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {name}"))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        if n as u64 > MAX_LINE {
            bail!("{name}:{number}: line longer than {MAX_LINE} bytes; allowed: one record per line");
        }
        if let Err(msg) = f(&line) {
            bail!("{name}:{number}: {msg}");
        }
    }
}

/// A bad record as an error shows it: at most 60 characters, control characters escaped (a
/// carriage return or escape sequence must not break the one-line error or the terminal).
fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_end();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 60 {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_hex(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"0x").or_else(|| t.strip_prefix(b"0X")).unwrap_or(t);
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in t {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = v << 4 | d as u64;
    }
    Some(v)
}

/// Parses one lackey line: `I  addr,size`, ` L addr,size`, ` S ...`, ` M ...`. Valgrind's own
/// messages (`==pid== ...`) and blank lines yield `None`.
fn parse_lackey(line: &[u8]) -> std::result::Result<Option<Access>, String> {
    let t = line.trim_ascii();
    if t.is_empty() || t.starts_with(b"==") || t.starts_with(b"--") {
        return Ok(None);
    }
    let bad = || format!("expected `I|L|S|M <hex address>,<size>`, found `{}`", show(t));
    let kind = match t[0] {
        b'I' => AccessKind::Fetch,
        b'L' => AccessKind::Load,
        // A modify is one read-modify-write instruction: one translation, with write permission.
        b'S' | b'M' => AccessKind::Store,
        _ => return Err(bad()),
    };
    let rest = t[1..].trim_ascii_start();
    let comma = rest.iter().position(|&c| c == b',').ok_or_else(bad)?;
    let addr = parse_hex(&rest[..comma]).ok_or_else(bad)?;
    let size_txt = &rest[comma + 1..];
    if size_txt.is_empty() || size_txt.len() > 9 || !size_txt.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let size = size_txt.iter().fold(0u32, |v, &c| v * 10 + (c - b'0') as u32);
    Ok(Some(Access { addr, size, kind }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(format: Format, data: &[u8]) -> Result<Vec<Access>> {
        let mut v = Vec::new();
        let mut r: &[u8] = data;
        for_each_access(&mut r, format, "t", |a| v.push(a))?;
        Ok(v)
    }

    #[test]
    fn raw64_reads_little_endian_addresses() {
        let mut data = Vec::new();
        for a in [0x1000u64, 0xdead_beef, u64::MAX] {
            data.extend_from_slice(&a.to_le_bytes());
        }
        let v = collect(Format::Raw64, &data).unwrap();
        assert_eq!(v.iter().map(|a| a.addr).collect::<Vec<_>>(), [0x1000, 0xdead_beef, u64::MAX]);
    }

    #[test]
    fn raw64_handles_addresses_split_across_reads() {
        let data: Vec<u8> = (0..100u64).flat_map(|a| (a * 4096).to_le_bytes()).collect();
        // A BufReader with a 5-byte buffer splits almost every address.
        let mut r = BufReader::with_capacity(5, &data[..]);
        let mut v = Vec::new();
        for_each_access(&mut r, Format::Raw64, "t", |a| v.push(a.addr)).unwrap();
        assert_eq!(v, (0..100u64).map(|a| a * 4096).collect::<Vec<_>>());
    }

    #[test]
    fn raw64_rejects_a_partial_address_naming_the_offset() {
        let e = collect(Format::Raw64, &[0u8; 13]).unwrap_err().to_string();
        assert!(e.contains("13 bytes") && e.contains("byte 8"), "{e}");
    }

    #[test]
    fn hex_skips_blanks_and_comments_and_names_the_bad_line() {
        let v = collect(Format::Hex, b"# trace\n0x1000\n\n  2000  \nFFFF\n").unwrap();
        assert_eq!(v.iter().map(|a| a.addr).collect::<Vec<_>>(), [0x1000, 0x2000, 0xffff]);
        let e = collect(Format::Hex, b"0x1000\n0x2000\nzz\n").unwrap_err().to_string();
        assert!(e.starts_with("t:3:") && e.contains("`zz`"), "{e}");
    }

    #[test]
    fn a_bad_record_is_shown_on_one_line() {
        let e = collect(Format::Hex, b"# c\n\r\rj\r\x1b[2J0x1\n").unwrap_err().to_string();
        assert!(e.starts_with("t:2: ") && e.contains(r"`j\r\u{1b}[2J0x1`"), "{e}");
        let long = [b'z'; 100];
        let e = collect(Format::Hex, &long).unwrap_err().to_string();
        assert!(e.contains(&format!("`{}...`", "z".repeat(60))), "{e}");
    }

    #[test]
    fn a_line_without_end_is_refused_at_the_cap() {
        let zeros = vec![0u8; 3 * MAX_LINE as usize];
        for f in [Format::Hex, Format::Lackey] {
            let e = collect(f, &zeros).unwrap_err().to_string();
            assert!(e.starts_with("t:1: line longer than 4096 bytes"), "{e}");
        }
        // A line of exactly the cap (newline included) is read.
        let mut ok = vec![b' '; MAX_LINE as usize - 5];
        ok.extend_from_slice(b"0x10\n");
        assert_eq!(collect(Format::Hex, &ok).unwrap().len(), 1);
    }

    #[test]
    fn lackey_maps_kinds_and_skips_valgrind_messages() {
        let text = b"==123== Lackey, an example Valgrind tool\nI  0400d7d4,8\n L 1ffefffd70,8\n S 7ff000398,4\n M 0421f9b0,16\n";
        let v = collect(Format::Lackey, text).unwrap();
        assert_eq!(
            v,
            [
                Access { addr: 0x400d7d4, size: 8, kind: AccessKind::Fetch },
                Access { addr: 0x1ffefffd70, size: 8, kind: AccessKind::Load },
                Access { addr: 0x7ff000398, size: 4, kind: AccessKind::Store },
                Access { addr: 0x421f9b0, size: 16, kind: AccessKind::Store },
            ]
        );
    }

    #[test]
    fn lackey_errors_name_the_line() {
        for bad in [&b"I  0400d7d4\n"[..], b" X 1000,8\n", b" L 1000,x\n", b" L ,8\n"] {
            let mut text = b"I  0400d7d4,8\n".to_vec();
            text.extend_from_slice(bad);
            let e = collect(Format::Lackey, &text).unwrap_err().to_string();
            assert!(e.starts_with("t:2: expected"), "{e}");
        }
    }

    #[test]
    fn gzip_input_is_detected() {
        use flate2::{write::GzEncoder, Compression};
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("tlblab-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.hex.gz");
        let mut e = GzEncoder::new(File::create(&path).unwrap(), Compression::fast());
        e.write_all(b"0x1000\n0x2000\n").unwrap();
        e.finish().unwrap();
        let mut r = open(&path).unwrap();
        let mut v = Vec::new();
        for_each_access(&mut *r, Format::Hex, "t", |a| v.push(a.addr)).unwrap();
        assert_eq!(v, [0x1000, 0x2000]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
