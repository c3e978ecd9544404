//! will-it-scale testcases (antonblanchard/will-it-scale, tests/tlb_flush{1,2,3}.c and
//! tests/page_fault1.c, read at HEAD 75f66e4; docs/references/linux-mm.md#will-it-scale), each task's loop as
//! there:
//!
//! - `tlb_flush1`: own 128 MiB temp file (created, truncated, unlinked), mapped `MAP_PRIVATE`;
//!   per page: write a byte, `madvise(MADV_DONTNEED)` the page, the byte must read back 0,
//!   one iteration; `munmap` after the last page, map again.
//! - `tlb_flush2`: the same over a 1 MiB anonymous private mapping.
//! - `tlb_flush3`: as `tlb_flush1` with `MAP_SHARED`; the byte must read back 1.
//! - `page_fault1`: map 128 MiB anonymous, write one byte per page (one iteration each), unmap.

use super::{NativeWorkload, TaskCtx};
use crate::sys::{self, Backing, Mapping, PAGE};

const FILESIZE: usize = 128 << 20;
const TLB_FLUSH2_MEMSIZE: usize = 1 << 20;
const PAGE_FAULT1_MEMSIZE: usize = 128 << 20;

/// Runs one task until the stop flag is set.
pub fn task(w: NativeWorkload, ctx: &TaskCtx, dir: &std::path::Path) -> Result<(), String> {
    let mut iterations = 0u64;
    let io = |e: std::io::Error| e.to_string();
    match w {
        NativeWorkload::TlbFlush1 | NativeWorkload::TlbFlush3 => {
            // will-it-scale uses mkstemp in /tmp (`dir` by default).
            let file = sys::unlinked_temp_file(dir, FILESIZE as u64)
                .map_err(|e| format!("a {FILESIZE}-byte file in {}: {e}", dir.display()))?;
            let (shared, expect) = (w == NativeWorkload::TlbFlush3, u8::from(w == NativeWorkload::TlbFlush3));
            while !ctx.stopped() {
                let backing = if shared { Backing::FileShared(&file) } else { Backing::FilePrivate(&file) };
                let m = Mapping::new(FILESIZE, backing).map_err(io)?;
                if !flush_loop(&m, expect, ctx, &mut iterations)? {
                    break;
                }
            }
        }
        NativeWorkload::TlbFlush2 => {
            while !ctx.stopped() {
                let m = Mapping::new(TLB_FLUSH2_MEMSIZE, Backing::Anon).map_err(io)?;
                if !flush_loop(&m, 0, ctx, &mut iterations)? {
                    break;
                }
            }
        }
        NativeWorkload::PageFault1 => {
            while !ctx.stopped() {
                let m = Mapping::new(PAGE_FAULT1_MEMSIZE, Backing::Anon).map_err(io)?;
                for off in (0..m.len()).step_by(PAGE) {
                    if ctx.stopped() {
                        return Ok(());
                    }
                    m.write_byte(off, 0);
                    iterations += 1;
                    ctx.done(iterations);
                }
                // munmap at drop
            }
        }
        NativeWorkload::Ebizzy => unreachable!("ebizzy has its own task"),
    }
    Ok(())
}

/// One pass over the mapping: write, `MADV_DONTNEED`, read back. `Ok(false)` once stopped.
fn flush_loop(m: &Mapping, expect: u8, ctx: &TaskCtx, iterations: &mut u64) -> Result<bool, String> {
    for off in (0..m.len()).step_by(PAGE) {
        if ctx.stopped() {
            return Ok(false);
        }
        m.write_byte(off, 1);
        m.madvise(off, PAGE, sys::Advice::DontNeed).map_err(|e| e.to_string())?;
        let v = m.read_byte(off);
        if v != expect {
            return Err(format!(
                "byte at page {} read back {v} after MADV_DONTNEED, expected {expect}",
                off / PAGE
            ));
        }
        *iterations += 1;
        ctx.done(*iterations);
    }
    Ok(true)
}
