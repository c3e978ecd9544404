//! Probe and fill plans: per access kind, the arrays a lookup probes (the live page sizes, level by
//! level) and the arrays a fill writes, rebuilt when a page size, a global entry or id tracking
//! goes live.

use super::replacement::Replacement;
use super::spec::{Inclusion, PageSize, NR_ACCESS_KINDS, NR_PAGE_SIZES};
use super::tag::{SIZE_SHIFT, VALID};
use super::{Lp, TlbHierarchy, MAX_LEVELS, NONE};

/// One step of a lookup's probe plan: probe one array for one page size, and/or close a level.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProbeStep {
    /// `VALID | size << SIZE_SHIFT`: the tag of the translation without vpn and asid.
    pub(super) tag_base: u64,
    /// The array to probe; `NONE` for a level holding none of the live page sizes.
    pub(super) array: u8,
    pub(super) size: PageSize,
    /// `shift + 64 - 57`: `va << 7 >> vpn_shift` drops the bits above the linear address and
    /// the page offset in two shifts.
    pub(super) vpn_shift: u8,
    /// Position of the level in the path (0 = innermost) and its view.
    pub(super) depth: u8,
    pub(super) view: u8,
    /// The level's 1-based number, reported on a hit.
    pub(super) level: u8,
    /// The last step of its level: all of the level's probes missed, count a miss on `view`.
    pub(super) ends_level: bool,
}

pub(super) const MAX_STEPS: usize = MAX_LEVELS * NR_PAGE_SIZES;

pub(super) const NO_STEP: ProbeStep = ProbeStep {
    tag_base: 0,
    array: NONE,
    size: PageSize::Size4K,
    vpn_shift: 0,
    depth: 0,
    view: 0,
    level: 0,
    ends_level: false,
};

/// A lookup's plan for one access kind, rebuilt when a page size goes live: the arrays of the
/// live page sizes, level by level and in page-size order within a level.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) len: u8,
    pub(super) steps: [ProbeStep; MAX_STEPS],
    /// The fused fast path ([`TlbHierarchy::lookup_or_fill`]) applies: one page size is live, there
    /// are levels and each has one array for it (so `steps[..len]` is one step per level),
    /// replacement is LRU and levels are non-inclusive (so a fill touches no array but the one it
    /// writes), no global entry exists (so a probe is one compare per way) and no address space
    /// was flushed yet (so no entry is stale and no per-id count is kept: see
    /// [`AsidIds::tracking`]).
    pub(super) chain: bool,
    /// Per page size, the steps a lookup of that size alone visits ([`SizedSteps`]).
    pub(super) sized: [SizedSteps; NR_PAGE_SIZES],
}

/// The steps of [`Plan::steps`] a lookup of one page size visits
/// ([`TlbHierarchy::lookup_sized`]): those probing an array of that size and those closing a
/// level, in plan order (any other step neither probes nor counts for it); and the level-1 step
/// of the size, where [`TlbHierarchy::l1_way`] looks.
#[derive(Debug, Clone, Copy)]
pub(super) struct SizedSteps {
    pub(super) len: u8,
    /// Indices into [`Plan::steps`]: at most a probe and a level's end per level.
    pub(super) steps: [u8; 2 * MAX_LEVELS],
    /// The index of the first level-1 step probing an array of the size, or `NONE`.
    pub(super) l1: u8,
}

pub(super) const NO_SIZED: SizedSteps = SizedSteps { len: 0, steps: [0; 2 * MAX_LEVELS], l1: NONE };

/// One array a fill writes: `depth` in the access kind's path.
#[derive(Debug, Clone, Copy)]
pub(super) struct FillStep {
    pub(super) array: u8,
    pub(super) depth: u8,
}

/// Where fills of one access kind and page size go, innermost first.
#[derive(Debug, Clone, Copy)]
pub(super) struct FillPlan {
    pub(super) len: u8,
    /// How many of `steps` a page-walk fill writes (all, or the innermost level only when
    /// exclusive).
    pub(super) walk_len: u8,
    pub(super) steps: [FillStep; MAX_LEVELS],
}

impl TlbHierarchy {
    /// Recomputes every logical processor's lookup and fill plans from its paths and live page
    /// sizes.
    pub(super) fn build_plans(&mut self) {
        // The chain names address spaces without purging: a lone logical processor cannot run
        // out of ids (see `AsidIds`), a core's siblings could.
        let lone = self.lps.len() == 1;
        let (tracking, replacement, inclusion) = (self.ids.tracking, self.replacement, self.inclusion);
        for side in &mut self.lps {
            side.build_plans(
                lone && !tracking && replacement == Replacement::Lru && inclusion == Inclusion::NonInclusive,
                inclusion,
            );
        }
    }
}

impl Lp {
    /// [`TlbHierarchy::build_plans`] for this logical processor; `chain_ok`: the hierarchy allows
    /// the fused fast path.
    fn build_plans(&mut self, chain_ok: bool, inclusion: Inclusion) {
        for k in 0..NR_ACCESS_KINDS {
            let plan = &mut self.plans[k];
            plan.len = 0;
            plan.chain = chain_ok && self.sizes_live.count_ones() == 1 && !self.globals && self.depths[k] > 0;
            for depth in 0..self.depths[k] as usize {
                let view = self.paths[k][depth];
                let level = self.views[view as usize].level;
                let first = plan.len as usize;
                for size in PageSize::ALL {
                    let array = self.view_arrays[view as usize][k][size as usize];
                    if array != NONE && self.sizes_live & (1 << size as u8) != 0 {
                        plan.steps[plan.len as usize] = ProbeStep {
                            tag_base: VALID | (size as u64) << SIZE_SHIFT,
                            array,
                            size,
                            vpn_shift: (size.shift() + 64 - 57) as u8,
                            depth: depth as u8,
                            view,
                            level,
                            ends_level: false,
                        };
                        plan.len += 1;
                    }
                }
                if plan.len as usize == first {
                    // Nothing to probe, but the level still counts a miss.
                    plan.steps[first] = ProbeStep { depth: depth as u8, view, level, ..NO_STEP };
                    plan.len += 1;
                    plan.chain = false;
                }
                plan.steps[plan.len as usize - 1].ends_level = true;
            }
            for size in PageSize::ALL {
                let z = &mut plan.sized[size as usize];
                *z = NO_SIZED;
                for (i, s) in plan.steps[..plan.len as usize].iter().enumerate() {
                    let probes = s.array != NONE && s.size == size;
                    if probes || s.ends_level {
                        z.steps[z.len as usize] = i as u8;
                        z.len += 1;
                    }
                    if probes && s.depth == 0 && z.l1 == NONE {
                        z.l1 = i as u8;
                    }
                }
            }
            for size in PageSize::ALL {
                let fill = &mut self.fills[k][size as usize];
                fill.len = 0;
                for depth in 0..self.depths[k] as usize {
                    let array = self.view_arrays[self.paths[k][depth] as usize][k][size as usize];
                    if array != NONE {
                        fill.steps[fill.len as usize] = FillStep { array, depth: depth as u8 };
                        fill.len += 1;
                    }
                }
                fill.walk_len = match inclusion {
                    // The innermost level holding the size: level 1, unless it has no array
                    // for it (a walk must still leave the translation somewhere).
                    Inclusion::Exclusive => {
                        let inner = fill.steps[0].depth;
                        fill.steps[..fill.len as usize].iter().take_while(|f| f.depth == inner).count() as u8
                    }
                    _ => fill.len,
                };
            }
        }
    }
}
