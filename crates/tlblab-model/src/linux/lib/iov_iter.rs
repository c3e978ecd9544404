//! Copies between user memory and kernel buffers (lib/iov_iter.c, v4.9: `copy_page_from_iter`,
//! `copy_to_iter`; arch/x86/lib/copy_user_64.S underneath), charged by where the bytes live
//! (docs/references/machine-costs.md#copies-by-level). A message copy of a pipe, AF_UNIX or
//! loopback socket call reads a user buffer the task reuses every call and writes a kernel
//! buffer it has just allocated or written (or reads one and writes the reused user buffer):
//! when source and destination together fit this core's L1 data cache, both are there and
//! the copy runs at the core's in-cache store rate (`memory.clear_page_mbps`, a fill into cache:
//! an in-cache copy issues one store per load and the stores are its bound). A larger copy
//! streams at the one-core DRAM-to-DRAM rate (`memory.memcpy_mbps`).
//!
//! Not modelled: a receive's source lines, written last by the sender on another core, come to
//! the reader cache to cache; the copy runs at the in-cache rate as if they were local, without
//! those line transfers (an underestimate). The rule looks at one copy, not at the user's buffers
//! around it: netperf's UDP sender cycles through 32 buffers, so from 1 KiB messages on its
//! source outgrows the L1d although one copy fits (an underestimate); copies between the L1d and
//! DRAM in size, which the L2 or the LLC hold, pay the DRAM rate (an overestimate).

use crate::profile::MachineProfile;
use crate::time::Ps;

/// The smallest L1 data cache of the x86 cores the profiles model: 32 KiB
/// (docs/references/machine-costs.md#copies-by-level).
pub const L1D_BYTES: u64 = 32 * 1024;

/// Picoseconds per byte copied, in cache and from DRAM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyRate {
    /// Source and destination in this core's L1/L2 (`memory.clear_page_mbps`).
    pub cache_byte_ps: f64,
    /// DRAM to DRAM (`memory.memcpy_mbps`).
    pub dram_byte_ps: f64,
}

impl CopyRate {
    pub fn from_profile(p: &MachineProfile) -> CopyRate {
        CopyRate::new(p.memory.clear_page_mbps.value, p.memory.memcpy_mbps.value)
    }

    /// From the two rates in MB/s (10^6 bytes per 10^12 ps).
    pub fn new(cache_mbps: f64, dram_mbps: f64) -> CopyRate {
        CopyRate { cache_byte_ps: 1e6 / cache_mbps, dram_byte_ps: 1e6 / dram_mbps }
    }

    /// Whether a message copy of `bytes` has its source and destination in the core's caches:
    /// both fit the L1 data cache.
    pub fn in_cache(bytes: u64) -> bool {
        2 * bytes <= L1D_BYTES
    }

    /// Picoseconds per byte of a message copy of `bytes`.
    pub fn byte_ps(&self, bytes: u64) -> f64 {
        if CopyRate::in_cache(bytes) {
            self.cache_byte_ps
        } else {
            self.dram_byte_ps
        }
    }

    /// A message copy of `bytes` (`copy_from_user` / `copy_to_user`).
    pub fn copy(&self, bytes: u64) -> Ps {
        Ps::round_from(self.byte_ps(bytes) * bytes as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_copy_runs_at_the_cache_rate_and_a_large_one_at_the_dram_rate() {
        // 10 GB/s in cache (0.1 ns a byte), 5 GB/s from DRAM (0.2 ns a byte).
        let r = CopyRate::new(10_000.0, 5_000.0);
        assert_eq!(r.copy(100), Ps::round_from(10_000.0));
        // 16 KiB: source and destination fill the 32 KiB L1d exactly, still in cache.
        assert_eq!(r.copy(16 * 1024), Ps::round_from(0.1 * 16384.0 * 1000.0));
        // One byte more: DRAM.
        assert_eq!(r.copy(16 * 1024 + 1), Ps::round_from(0.2 * 16385.0 * 1000.0));
        assert_eq!(r.copy(0), Ps::ZERO);
    }
}
