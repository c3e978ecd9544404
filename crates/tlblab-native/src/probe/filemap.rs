//! The read fault of a shared tmpfs mapping and what fault-around adds per page it maps
//! (mm/filemap.c `filemap_map_pages`, called by `do_fault_around` for a read fault; v6.18): the
//! per-page cost the model charges as `kernel.fault_around_page_cycles`
//! (docs/references/linux-mm.md#write-notify for what such a fault maps).
//!
//! Two shmem files (`memfd_create`) of the same size, mapped shared: in the dense one every page
//! is cached, in the sparse one only the first page of each 16-page fault-around window (the
//! rest are holes, which `filemap_map_pages` passes over without visiting a page). After a
//! `MADV_DONTNEED` of the whole mapping (untimed), one read of the first page of every window
//! faults once per window in both: the dense file's fault maps 16 pages, the sparse one's 1.
//! The difference per fault over 15 is the per-page cost of fault-around; the sparse fault is a
//! file read fault that maps one page. Neither is a benchmark the model is compared with.

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::stats::Summary;
use crate::sys::{self, Advice, Backing, Mapping, PAGE};

/// `fault_around_bytes`' default (64 KiB) in pages.
pub const WINDOW: usize = 16;
/// Windows per file: 8 MiB, past the L2 TLB's reach, within any shmem limit.
const WINDOWS: usize = 128;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultAround {
    /// A read fault whose fault-around maps the whole 16-page window, ns (median over blocks).
    pub dense_ns: Summary,
    /// A read fault that maps only the faulting page (its neighbours are holes), ns.
    pub sparse_ns: Summary,
}

impl FaultAround {
    /// What mapping one more page costs a read fault, ns (blocks paired).
    pub fn per_page_ns(&self) -> f64 {
        ((self.dense_ns.median - self.sparse_ns.median) / (WINDOW - 1) as f64).max(0.0)
    }
}

/// `runs` blocks of `rounds` rounds: each round zaps both mappings (untimed) and reads the first
/// page of each window, timing the reads; a block keeps its median round.
pub fn fault_around(runs: usize, rounds: usize) -> std::io::Result<FaultAround> {
    let len = WINDOWS * WINDOW * PAGE;
    let dense_file = sys::memfd("tlblab-fault-around-dense", len as u64)?;
    let sparse_file = sys::memfd("tlblab-fault-around-sparse", len as u64)?;
    let dense = Mapping::new(len, Backing::FileShared(&dense_file))?;
    let sparse = Mapping::new(len, Backing::FileShared(&sparse_file))?;
    for page in 0..WINDOWS * WINDOW {
        dense.write_byte(page * PAGE, 1);
        if page % WINDOW == 0 {
            sparse.write_byte(page * PAGE, 1);
        }
    }
    let round = |m: &Mapping| -> std::io::Result<f64> {
        m.madvise(0, m.len(), Advice::DontNeed)?;
        let t = Instant::now();
        for w in 0..WINDOWS {
            std::hint::black_box(m.read_byte(w * WINDOW * PAGE));
        }
        Ok(t.elapsed().as_nanos() as f64 / WINDOWS as f64)
    };
    let (mut d, mut s) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let (mut dr, mut sr) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        // The first round of a block warms the page tables and the caches; left out.
        for i in 0..=rounds {
            let (a, b) = (round(&dense)?, round(&sparse)?);
            if i > 0 {
                dr.push(a);
                sr.push(b);
            }
        }
        d.push(Summary::of(&dr).median);
        s.push(Summary::of(&sr).median);
    }
    Ok(FaultAround { dense_ns: Summary::of(&d), sparse_ns: Summary::of(&s) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_a_window_costs_more_than_mapping_one_page() {
        let f = fault_around(3, 5).unwrap();
        assert!(f.sparse_ns.median > 50.0, "{f:?}");
        assert!(f.dense_ns.median > f.sparse_ns.median, "{f:?}");
        assert!(f.per_page_ns() > 0.0 && f.per_page_ns() < f.dense_ns.median, "{f:?}");
    }
}
