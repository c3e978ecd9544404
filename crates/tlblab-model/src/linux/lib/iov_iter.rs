//! Copies between user memory and kernel buffers (lib/iov_iter.c, v4.9: `copy_page_from_iter`,
//! `copy_to_iter`), charged at the profile's memcpy rate: the data's own cache lines are not
//! moved between the writer's and the reader's caches.

use crate::profile::MachineProfile;
use crate::time::Ps;

/// Picoseconds per byte copied (`memory.memcpy_mbps`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyRate {
    pub byte_ps: f64,
}

impl CopyRate {
    pub fn from_profile(p: &MachineProfile) -> CopyRate {
        // MB/s = 10^6 bytes per 10^12 ps.
        CopyRate { byte_ps: 1e6 / p.memory.memcpy_mbps.value }
    }

    pub fn copy(&self, bytes: u64) -> Ps {
        Ps::round_from(self.byte_ps * bytes as f64)
    }
}
