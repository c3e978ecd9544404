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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::tlb::tag::make_tag;
    use crate::hw::tlb::{PageSize, TlbPayload};
    use crate::rng::Rng;

    /// Random sets of invalid, stale, live and global ways, as a tracking hierarchy holds them
    /// (a live way's stamp is distinct and at least 1; an invalid one's is 0; a stale one keeps
    /// its stamp): the unrolled scan picks the way of the plain one, for each unrolled width.
    fn same_victim<const W: usize>(rng: &mut Rng) {
        let mut ids = AsidIds::new(1);
        ids.tracking = true;
        // Some ids held, the rest unowned (their entries stale).
        for asid in 0..64u16 {
            ids.name(0, asid);
        }
        for asid in (0..64u16).filter(|a| a % 3 == 0) {
            ids.unbind(0, asid);
        }
        let mut clock = 1;
        for _ in 0..2000 {
            let set: [Way; W] = std::array::from_fn(|_| {
                clock += 1 + rng.below(3);
                let id = rng.below(70);
                let key = make_tag(rng.below(1 << 20), PageSize::Size4K, id & ASID_MASK);
                match rng.below(8) {
                    0 => Way::default(),
                    1 => Way {
                        key: (key & !ASID_MASK) | GLOBAL,
                        payload: TlbPayload::new(1, true),
                        stamp: clock,
                    },
                    _ => Way { key, payload: TlbPayload::new(1, true), stamp: clock },
                }
            });
            assert_eq!(lru_victim_w::<W>(&set, &ids), lru_victim_tracking(&set, &ids), "{set:?}");
            // Without tracking: the smallest stamp.
            ids.tracking = false;
            assert_eq!(lru_victim_w::<W>(&set, &ids), lru_oldest(&set));
            ids.tracking = true;
        }
    }

    #[test]
    fn the_unrolled_victim_scan_picks_the_plain_scans_way() {
        let mut rng = Rng::stream(7, "victims");
        same_victim::<4>(&mut rng);
        same_victim::<6>(&mut rng);
        same_victim::<8>(&mut rng);
        same_victim::<12>(&mut rng);
    }
}
