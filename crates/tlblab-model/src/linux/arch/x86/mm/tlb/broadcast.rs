//! v6.15 broadcast TLB invalidation on AMD (Rik van Riel's series: d504d1247e36 global ASIDs,
//! be88a1dd6112 their context switch and flush, 4afeb0ed1753 enabling them for multi-threaded
//! processes, 72a920eacd8a and 0b7eb55cb706 for reclaim; docs/references/linux-6x.md#invlpgb):
//! an mm seen running on 4 or more CPUs gets a global ASID, one PCID on every CPU, and its flushes
//! become INVLPGBs that reach every core's TLB without interrupting it, then one TLBSYNC that
//! waits for them all.
//!
//! The invalidations take effect on every CPU when issued; the initiator pays the issue of each
//! and the TLBSYNC (the model checker, `crate::check`, explores the window in between).

use super::{is_global_asid, FlushInfo, TLB_FLUSH_ALL, TLB_NR_DYN_ASIDS};
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::Kernel;
use crate::profile::MachineProfile;
use crate::time::Ps;

/// `consider_global_asid`'s threshold: `mm_active_cpus_exceeds(mm, 3)` (4afeb0ed1753).
pub const GLOBAL_ASID_THRESHOLD: u32 = 3;

/// What INVLPGB and TLBSYNC cost (profile `kernel.invlpgb_cycles`, `kernel.tlbsync_ns`).
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    pub invlpgb: Ps,
    pub tlbsync: Ps,
}

impl Costs {
    pub fn from_profile(p: &MachineProfile) -> Option<Costs> {
        let (i, t) = (p.kernel.invlpgb_cycles.as_ref()?, p.kernel.tlbsync_ns.as_ref()?);
        Some(Costs { invlpgb: Ps::from_cycles(i.value, p.clock_mhz()), tlbsync: Ps::from_ns(t.value) })
    }
}

/// The machine's broadcast flushing, where the kernel enables it and the CPU has INVLPGB.
#[derive(Debug, Clone)]
pub struct Broadcast {
    /// `invlpgb_count_max`: the most pages one INVLPGB names.
    pub count_max: u64,
    /// `last_global_asid`: global ASIDs are handed out upwards from `TLB_NR_DYN_ASIDS`.
    last: u16,
    /// `MAX_ASID_AVAILABLE`: `(1 << 12) - 2`, or `(1 << 11) - 2` where page-table isolation
    /// takes a PCID bit for the user copies.
    max: u16,
}

impl Broadcast {
    pub fn new(count_max: u32, pti: bool) -> Broadcast {
        let bits = if pti { 11 } else { 12 };
        Broadcast { count_max: count_max.max(1) as u64, last: TLB_NR_DYN_ASIDS as u16, max: (1 << bits) - 2 }
    }

    /// `allocate_global_asid`: the next free one. The model's mms never exit, so none is ever
    /// freed and the space is never reset (`reset_global_asid_space`); `None` once all are
    /// taken (the kernel's "should never happen" warning), and the mm keeps its IPIs.
    fn allocate(&mut self) -> Option<u16> {
        (self.last < self.max).then(|| {
            let a = self.last;
            self.last += 1;
            a
        })
    }
}

/// The INVLPGBs `broadcast_tlb_flush` issues for `info` (4afeb0ed1753): one for a full flush,
/// else one per `invlpgb_count_max` entries of the stride; each twice under page-table isolation
/// (the user PCID too).
pub fn invlpgbs(info: &FlushInfo, count_max: u64, pti: bool) -> u64 {
    let per_pcid = if info.end == TLB_FLUSH_ALL {
        1
    } else if info.stride_shift == PAGE_SHIFT || info.stride_shift == 21 {
        info.nr_entries().div_ceil(count_max).max(1)
    } else {
        info.nr_entries().max(1)
    };
    per_pcid * if pti { 2 } else { 1 }
}

/// `finish_asid_transition`'s test: whether one of the CPUs of `mm_cpumask` (their `loaded_mm`
/// and `loaded_mm_asid`) still runs `mm` on an ASID other than its global `asid`.
pub fn transition_stragglers(
    mut cpus: impl Iterator<Item = (Option<MmId>, u16)>,
    mm: MmId,
    asid: u16,
) -> bool {
    cpus.any(|(loaded, a)| loaded == Some(mm) && a != asid)
}

impl Kernel {
    /// The global ASID of `mm`, where broadcast flushing is on.
    pub(in crate::linux) fn global_asid(&self, mm: MmId) -> Option<u16> {
        self.arch.x86.broadcast.as_ref().and(self.mm.mms[mm as usize].global_asid)
    }

    /// `consider_global_asid` after an IPI flush of `mm` by task `t` at `now`: once in a while
    /// (`(pid & 0x1f) == (jiffies & 0x1f)`, a task's pid taken as its index: consecutive thread
    /// ids, the offset being absorbed by the random start of `jiffies`), give the mm a global
    /// ASID if more than 3 CPUs run it, not lazily (`mm_active_cpus_exceeds`).
    pub(in crate::linux) fn consider_global_asid(&mut self, mm: MmId, t: usize, now: Ps) {
        let Some(b) = self.arch.x86.broadcast.as_mut() else { return };
        if (t as u64 & 0x1f) != (self.jiffies.at(now) & 0x1f) {
            return;
        }
        let m = &self.mm.mms[mm as usize];
        if m.global_asid.is_some() || m.cpumask.weight() <= GLOBAL_ASID_THRESHOLD {
            return;
        }
        let active = m
            .cpumask
            .iter()
            .filter(|&c| {
                let st = &self.cpus[c as usize].x86.st;
                st.loaded_mm == Some(mm) && !st.is_lazy
            })
            .count() as u32;
        if active <= GLOBAL_ASID_THRESHOLD {
            return;
        }
        // use_global_asid -> mm_assign_global_asid: the CPUs running it pick it up at their
        // next switch or flush IPI (`asid_transition`).
        if let Some(a) = b.allocate() {
            let m = &mut self.mm.mms[mm as usize];
            m.global_asid = Some(a);
            m.asid_transition = true;
            self.counters.tlbflush.global_asids += 1;
        }
    }

    /// `broadcast_tlb_flush(info)` for `mm`'s global ASID `asid`, up to the TLBSYNC: the
    /// INVLPGBs, each dropping the range (or every non-global entry of the PCID) on every CPU
    /// that ever ran the mm (no other holds its global PCID). Returns their issue cost.
    pub(in crate::linux) fn broadcast_tlb_flush(&mut self, asid: u16, info: &FlushInfo) -> Ps {
        debug_assert!(is_global_asid(asid));
        let b = self.arch.x86.broadcast.as_ref().expect("broadcast flushing is on");
        let pti = self.cpus.first().is_some_and(|c| c.x86.pti);
        let n = invlpgbs(info, b.count_max, pti);
        let pcid = asid + 1;
        let m = &self.mm.mms[info.mm as usize];
        for cpu in m.ever_loaded.iter() {
            let c = &mut self.cpus[cpu as usize];
            let tlb = &mut self.tlbs[c.core];
            if info.is_full() {
                c.flush_asid(tlb, pcid);
            } else {
                for i in 0..info.nr_entries() {
                    let va = info.start + (i << info.stride_shift);
                    if tlb.invlpg(c.lp, va, pcid) > 0 && info.stride_shift == PAGE_SHIFT {
                        c.note_flushed(va >> PAGE_SHIFT);
                    }
                }
            }
        }
        self.counters.tlbflush.broadcast_flushes += 1;
        self.counters.tlbflush.invlpgb += n;
        self.costs.tlbflush.broadcast.expect("INVLPGB costs at boot").invlpgb * n
    }

    /// `finish_asid_transition`: whether some CPU still runs `mm` on a per-CPU ASID (then the
    /// flush also goes out as IPIs, which make it switch); clears `asid_transition` once none
    /// does.
    pub(in crate::linux) fn asid_transition_pending(&mut self, mm: MmId, asid: u16) -> bool {
        let m = &self.mm.mms[mm as usize];
        if !m.asid_transition {
            return false;
        }
        let running = m
            .cpumask
            .iter()
            .map(|c| (self.cpus[c as usize].x86.st.loaded_mm, self.cpus[c as usize].x86.st.loaded_asid));
        let straggler = transition_stragglers(running, mm, asid);
        if !straggler {
            self.mm.mms[mm as usize].asid_transition = false;
        }
        straggler
    }

    /// TLBSYNC: counted; returns its wait.
    pub(in crate::linux) fn tlbsync(&mut self) -> Ps {
        self.counters.tlbflush.tlbsync += 1;
        self.costs.tlbflush.broadcast.expect("INVLPGB costs at boot").tlbsync
    }

    /// `invlpgb_flush_all_nonglobals` (72a920eacd8a, reclaim's batch flush): one INVLPGB with no
    /// match bits, every non-global entry of every CPU, and its TLBSYNC. Returns its cost.
    pub(in crate::linux) fn invlpgb_flush_all_nonglobals(&mut self) -> Ps {
        for c in self.cpus.iter_mut() {
            let tlb = &mut self.tlbs[c.core];
            let pcid = c.x86.st.pcid();
            if tlb.may_hold(c.lp, pcid) {
                c.note_flushed_asid(tlb, pcid);
            }
            tlb.flush_all_asids(c.lp);
            c.x86.user_flush_pending |= c.x86.pti;
        }
        self.counters.tlbflush.invlpgb += 1;
        self.counters.tlbflush.full_flushes += self.cpus.len() as u64;
        self.costs.tlbflush.broadcast.expect("INVLPGB costs at boot").invlpgb + self.tlbsync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(start: u64, end: u64, stride_shift: u32) -> FlushInfo {
        FlushInfo { mm: 0, start, end, stride_shift, freed_tables: false, new_tlb_gen: 2, initiator: 0 }
    }

    #[test]
    fn a_33_page_range_is_five_invlpgbs_on_milan_and_a_full_flush_one() {
        let page = 1 << PAGE_SHIFT;
        assert_eq!(invlpgbs(&info(0, 33 * page, PAGE_SHIFT), 8, false), 5);
        assert_eq!(invlpgbs(&info(0, page, PAGE_SHIFT), 8, false), 1);
        assert_eq!(invlpgbs(&info(0, 8 * page, PAGE_SHIFT), 8, true), 2, "the user PCID too");
        assert_eq!(invlpgbs(&info(0, TLB_FLUSH_ALL, PAGE_SHIFT), 8, false), 1);
    }

    #[test]
    fn global_asids_start_above_the_dynamic_ones_and_run_out() {
        let mut b = Broadcast::new(8, true);
        assert_eq!(b.allocate(), Some(TLB_NR_DYN_ASIDS as u16));
        assert!(is_global_asid(b.allocate().unwrap()));
        let n = std::iter::from_fn(|| b.allocate()).count();
        assert_eq!(n, 2046 - TLB_NR_DYN_ASIDS - 2);
    }
}
