//! Replacement policies of one set: true LRU (per-way stamps), the MPC8xx counter (fill order,
//! the same stamps set on fills only) and tree pseudo-LRU (one bit tree per set).

use serde::{Deserialize, Serialize};

use super::array::Way;
use super::tag::{AsidIds, ASID_MASK, GLOBAL, UNOWNED, VALID};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used.
    Lru,
    /// Tree pseudo-LRU (ways must be a power of two).
    Plru,
    /// The MPC8xx's decrementing replacement counter (`MI_CTR`/`MD_CTR` index, 885RM §8.10.2,
    /// 801UM §11.8.2): a fill takes the slot the counter points at and hits do not move it, i.e.
    /// entries leave in the order they came (insertion stamps, no stamp on a hit). Equal to the
    /// counter while no single entry is invalidated; simulated 8xx runs use hw/ppc8xx/tlb.rs, which
    /// also keeps the counter's position across `tlbie` holes and the RSV4x reservation.
    Counter,
}

/// The way an LRU fill of `set` takes: the first holding no live entry, else the least recently
/// used.
#[inline(always)]
pub(super) fn lru_victim(set: &[Way], ids: &AsidIds) -> usize {
    if ids.tracking {
        lru_victim_tracking(set, ids)
    } else {
        lru_oldest(set)
    }
}

/// The way with the smallest stamp: an invalid way (stamp 0), else the least recently used. The
/// LRU victim while no entry is stale.
#[inline(always)]
pub(super) fn lru_oldest(set: &[Way]) -> usize {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, way) in set.iter().enumerate() {
        if way.stamp < oldest {
            (victim, oldest) = (w, way.stamp);
        }
    }
    victim
}

/// [`lru_victim`] once entries may be stale: a stale way counts as stamp 0, like an invalid one.
#[inline(never)]
pub(super) fn lru_victim_tracking(set: &[Way], ids: &AsidIds) -> usize {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, way) in set.iter().enumerate() {
        let stamp = if ids.live(way.key) { way.stamp } else { 0 };
        if stamp < oldest {
            (victim, oldest) = (w, stamp);
        }
    }
    victim
}

/// [`lru_victim`] of a `W`-way set, the liveness test branch-free (a refill after a full flush
/// scans sets of stale and live entries alike): the same way.
#[inline(always)]
pub(super) fn lru_victim_w<const W: usize>(set: &[Way; W], ids: &AsidIds) -> usize {
    if !ids.tracking {
        return lru_oldest(set);
    }
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, way) in set.iter().enumerate() {
        let k = way.key;
        // `AsidIds::live` while tracking, without its branches (the id indexes in bounds).
        let live = (k & VALID != 0) & ((k & GLOBAL != 0) | (ids.owner[(k & ASID_MASK) as usize] != UNOWNED));
        let stamp = if live { way.stamp } else { 0 };
        if stamp < oldest {
            (victim, oldest) = (w, stamp);
        }
    }
    victim
}

/// Tree-PLRU: node bits, root at index 1; a set bit means "the next victim is in the right half".
#[inline(always)]
pub(super) fn plru_touch(bits: &mut u64, way: usize, ways: usize) {
    let (mut node, mut lo, mut hi) = (1usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if way < mid {
            *bits |= 1 << node; // used the left half: point at the right
            node *= 2;
            hi = mid;
        } else {
            *bits &= !(1 << node);
            node = node * 2 + 1;
            lo = mid;
        }
    }
}

pub(super) fn plru_victim(bits: u64, ways: usize) -> usize {
    let (mut node, mut lo, mut hi) = (1usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if bits >> node & 1 == 1 {
            node = node * 2 + 1;
            lo = mid;
        } else {
            node *= 2;
            hi = mid;
        }
    }
    lo
}
