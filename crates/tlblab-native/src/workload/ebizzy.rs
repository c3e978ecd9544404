//! ebizzy 0.3 (linux-test-project/ltp utils/benchmark/ebizzy-0.3/ebizzy.c;
//! docs/references/linux-mm.md#ebizzy) with `-m`: every buffer is `mmap`ed and `munmap`ed. With a current
//! glibc, default ebizzy's 512 KiB `malloc`/`free` end up reusing heap memory (the dynamic mmap threshold
//! rises after the first free), so it never returns memory to the kernel and sends no IPIs; `-m` keeps the
//! behaviour the 2013 regression was about: one ~128-page unmap and flush per record.
//!
//! Defaults: 10 chunks of 512 KiB (`record_size` 8 x 65536 records), filled with `mem[i][j] = j`
//! at start-up. Per iteration: pick a chunk, map a buffer, memcpy the chunk into it, pick a key,
//! bsearch it (it must be found), unmap, one record.

use super::TaskCtx;
use crate::sys::{Backing, Mapping};

pub const CHUNKS: usize = 10;
pub const RECORDS: usize = 64 * 1024;
pub const CHUNK_SIZE: usize = RECORDS * 8;

/// The source chunks, written once before the threads start and only read afterwards.
pub struct Chunks {
    mem: Vec<Mapping>,
}

impl Chunks {
    pub fn new() -> std::io::Result<Chunks> {
        let mut mem = Vec::with_capacity(CHUNKS);
        for _ in 0..CHUNKS {
            let m = Mapping::new(CHUNK_SIZE, Backing::Anon)?;
            // SAFETY: no thread exists yet that could read the chunk.
            let w = unsafe { m.words_mut() };
            for (j, r) in w.iter_mut().enumerate() {
                *r = j as u64;
            }
            mem.push(m);
        }
        Ok(Chunks { mem })
    }
}

/// ebizzy's `rand_num`: `*state *= 1103515245 + 12345` (a multiply by the *sum*, as written),
/// then `(state / 65536) % max`. From the initial state 0 it stays 0: every thread copies
/// chunk 0 and searches key 0, exactly as the real program does.
pub fn rand_num(max: u32, state: &mut u32) -> u32 {
    *state = state.wrapping_mul(1_103_515_245u32.wrapping_add(12_345));
    (*state / 65_536) % max
}

/// One thread's `search_mem()` loop.
pub fn task(ctx: &TaskCtx, chunks: &Chunks) -> Result<(), String> {
    let mut state = 0u32;
    let mut records = 0u64;
    while !ctx.stopped() {
        let src = &chunks.mem[rand_num(CHUNKS as u32, &mut state) as usize];
        let copy = Mapping::new(CHUNK_SIZE, Backing::Anon).map_err(|e| e.to_string())?;
        // SAFETY: `copy` is this thread's own fresh mapping; the chunks are never written after
        // start-up, so reading them through a shared view is race-free.
        let (dst, from) = unsafe { (copy.words_mut(), src.words()) };
        dst.copy_from_slice(from);
        let key = rand_num(RECORDS as u32, &mut state) as u64;
        if dst.binary_search(&key).is_err() {
            return Err(format!("couldn't find key {key}"));
        }
        drop(copy); // munmap
        records += 1;
        ctx.done(records);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_num_keeps_ebizzys_quirk() {
        let mut s = 0;
        assert!((0..100).all(|_| rand_num(10, &mut s) == 0));
        let mut s = 1;
        assert_eq!(rand_num(1 << 16, &mut s), (1_103_527_590u32 / 65_536) % (1 << 16));
    }
}
