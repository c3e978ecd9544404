//! Broadcast TLB invalidation on AArch64 (Arm ARM, "TLB maintenance instructions"; the
//! interconnect's side as docs/references/machine-costs.md#arm64-tlbi describes it).
//!
//! A `TLBI <op>IS` names a VA and ASID (`VALE1IS`, `VAE1IS`), a whole ASID (`ASIDE1IS`), every
//! EL1 entry (`VMALLE1IS`) or, with ARMv8.4's FEAT_TLBIRANGE, a range of pages (`RVALE1IS`,
//! `RVAE1IS`). The issuing core posts it and goes on; the interconnect carries it as a DVM
//! (distributed virtual memory) message to every core of the inner-shareable domain, which drops
//! the matching entries in hardware: no core is interrupted. A later `DSB ISH` of the issuer
//! waits until every TLBI it issued before has completed on every core: the interconnect sends
//! a DVM Sync to every core and collects their answers.
//!
//! The model: the DVM messages of the whole machine pass through one FIFO [`DvmNode`], which
//! spends `per_target` on each core of the domain per message (the fan-out and the collection
//! of answers), so a broadcast takes longer the more cores must acknowledge it, and concurrent
//! issuers queue behind each other (Andrea Arcangeli's 2020 observation that a TLBI's latency
//! grows about linearly with the CPUs broadcasting at once, docs/references/machine-costs.md#arm64-tlbi).
//! A DSB's Sync queues behind every message posted before it, then pays one round trip.

use crate::time::Ps;

/// What broadcast maintenance costs on a machine (profile `[tlbi]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbiCosts {
    /// The issuing core's own cost of one TLBI (posted: it does not wait for the broadcast).
    pub issue: Ps,
    /// The DVM node's time per message per core of the domain.
    pub per_target: Ps,
    /// A DVM Sync's round trip once the node sends it (the farthest core's answer).
    pub sync_round_trip: Ps,
}

/// The interconnect's DVM node: one FIFO for every broadcast maintenance message of the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DvmNode {
    /// When the node is free to take the next message.
    busy_until: Ps,
    /// Messages and Syncs it carried.
    pub messages: u64,
    pub syncs: u64,
}

/// What one `TLBI ...; ...; DSB ISH` sequence cost its issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sequence {
    /// Issuing the TLBIs (the core's own instruction cost).
    pub issue: Ps,
    /// The DSB's wait from the last issue until the Sync completed.
    pub dsb_wait: Ps,
    /// Of that wait, what other CPUs' messages queued ahead added (the sequence's completion
    /// against the same sequence on an idle node).
    pub behind_others: Ps,
}

impl Sequence {
    pub fn total(&self) -> Ps {
        self.issue + self.dsb_wait
    }
}

impl DvmNode {
    /// `n` TLBIs issued back to back from `at`, then `DSB ISH`, on a domain of `targets` cores.
    /// With `n` zero only the DSB (`arch_tlbbatch_flush`: the TLBIs went out earlier).
    pub fn tlbi_then_dsb(&mut self, at: Ps, n: u64, targets: u32, c: &TlbiCosts) -> Sequence {
        let hold = c.per_target * targets as u64;
        // `alone`: where the node would be with only this sequence's messages.
        let (mut t, mut alone) = (at, Ps::ZERO);
        let post = |t: Ps, busy: &mut Ps, alone: &mut Ps| {
            *busy = t.max(*busy) + hold;
            *alone = t.max(*alone) + hold;
        };
        for _ in 0..n {
            t += c.issue;
            post(t, &mut self.busy_until, &mut alone);
        }
        self.messages += n;
        self.syncs += 1;
        post(t, &mut self.busy_until, &mut alone);
        let done = self.busy_until + c.sync_round_trip;
        Sequence { issue: t - at, dsb_wait: done - t, behind_others: self.busy_until - alone }
    }

    /// `n` TLBIs issued back to back from `at` with no DSB after them (the DSB comes later:
    /// `tlbi_then_dsb` with no TLBI). Returns the issuer's time; the messages occupy the node.
    pub fn tlbi(&mut self, at: Ps, n: u64, targets: u32, c: &TlbiCosts) -> Ps {
        let hold = c.per_target * targets as u64;
        let mut t = at;
        for _ in 0..n {
            t += c.issue;
            self.busy_until = t.max(self.busy_until) + hold;
        }
        self.messages += n;
        t - at
    }
}

/// Largest page count one range TLBI names: `__TLBI_RANGE_PAGES(31, 3)`, (31 + 1) << 16.
pub const MAX_TLBI_RANGE_PAGES: u64 = 32 << 16;

/// Pages one range TLBI of `num` and `scale` covers: `(num + 1) << (5 * scale + 1)`.
const fn range_pages(num: u64, scale: u32) -> u64 {
    (num + 1) << (5 * scale + 1)
}

/// The TLBIs `__flush_tlb_range_op` issues for `pages` pages of stride one page: one per page
/// without range operations; with them, from scale 3 down, one range TLBI for the largest
/// multiple of the scale's unit that fits, and a last odd page by a plain TLBI (a range op
/// covers an even number of pages). `pages` is below [`MAX_TLBI_RANGE_PAGES`] (the caller
/// flushes the whole ASID beyond it). Returns (plain, range) TLBIs.
pub fn range_op_count(pages: u64, range: bool) -> (u64, u64) {
    if !range {
        return (pages, 0);
    }
    let (mut left, mut scale, mut plain, mut ranged) = (pages, 3i32, 0, 0);
    while left > 0 {
        if left == 1 {
            plain += 1;
            left = 0;
            continue;
        }
        if scale < 0 {
            // Cannot happen: scale 0 covers every even count below 64 and the odd one is plain.
            unreachable!("range TLBI loop ran past scale 0 with {left} pages");
        }
        let s = scale as u32;
        let max = range_pages(31, s);
        let n = left.min(max);
        let num = (n >> (5 * s + 1)) as i64 - 1;
        if num >= 0 {
            let covered = range_pages(num as u64, s);
            ranged += 1;
            left -= covered;
        }
        scale -= 1;
    }
    (plain, ranged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> TlbiCosts {
        TlbiCosts { issue: Ps::NS * 10, per_target: Ps::NS, sync_round_trip: Ps::NS * 100 }
    }

    #[test]
    fn posted_tlbis_drain_while_the_issuer_works_and_the_later_dsb_waits_for_the_rest() {
        let c = costs();
        // Per page TLBI + DSB, 4 pages, 80 cores, 1 us of other work between pages.
        let mut a = DvmNode::default();
        let mut t = Ps::ZERO;
        for _ in 0..4 {
            t += a.tlbi_then_dsb(t, 1, 80, &c).total() + Ps::NS * 1000;
        }
        // Batched: the TLBIs posted as the pages go, one DSB at the end.
        let mut b = DvmNode::default();
        let mut u = Ps::ZERO;
        for _ in 0..4 {
            u += b.tlbi(u, 1, 80, &c) + Ps::NS * 1000;
        }
        let dsb = b.tlbi_then_dsb(u, 0, 80, &c);
        u += dsb.total();
        assert_eq!(b.messages, 4);
        // Each page's TLBI (80 ns at the node) drained during the 1 us of work: the one DSB
        // waits for its own Sync only.
        assert_eq!(dsb.dsb_wait, Ps::NS * (80 + 100));
        assert!(u < t, "batched {u:?} vs per page {t:?}");
        // Per page saved: its TLBI's and Sync's time at the node and the round trip; the
        // batch pays one Sync and round trip back.
        assert_eq!(t - u, Ps::NS * (4 * (80 + 80 + 100) - (80 + 100)));
    }

    #[test]
    fn a_lone_sequence_costs_its_issues_and_a_sync_that_grows_with_the_domain() {
        let c = costs();
        let mut small = DvmNode::default();
        let s4 = small.tlbi_then_dsb(Ps::ZERO, 2, 4, &c);
        let mut big = DvmNode::default();
        let s80 = big.tlbi_then_dsb(Ps::ZERO, 2, 80, &c);
        assert_eq!(s4.issue, Ps::NS * 20);
        assert!(s80.dsb_wait > s4.dsb_wait, "{s80:?} vs {s4:?}");
        // 80 cores: the first TLBI holds the node 10-90 ns, the second 90-170, the Sync 170-250,
        // then its round trip: done at 350 ns, 330 after the last issue. 4 cores: 24-28, 128.
        assert_eq!(s80.dsb_wait, Ps::NS * 330);
        assert_eq!(s4.dsb_wait, Ps::NS * 108);
    }

    #[test]
    fn concurrent_issuers_queue_behind_each_other() {
        let c = costs();
        let mut n = DvmNode::default();
        let alone = DvmNode::default().tlbi_then_dsb(Ps::ZERO, 100, 64, &c);
        let first = n.tlbi_then_dsb(Ps::ZERO, 100, 64, &c);
        let second = n.tlbi_then_dsb(Ps::ZERO, 100, 64, &c);
        assert_eq!(first, alone);
        assert!(second.dsb_wait > first.dsb_wait + Ps::NS * 64 * 90, "{second:?} vs {first:?}");
        assert_eq!(first.behind_others, Ps::ZERO);
        assert_eq!(second.dsb_wait - second.behind_others, first.dsb_wait);
        assert_eq!((n.messages, n.syncs), (200, 2));
    }

    #[test]
    fn range_ops_cover_a_megabyte_in_a_few_instructions() {
        // tlb_flush2's 256 pages: one scale-1 op of 4 x 64 pages.
        assert_eq!(range_op_count(256, true), (0, 1));
        assert_eq!(range_op_count(256, false), (256, 0));
        assert_eq!(range_op_count(1, true), (1, 0));
        // 33 pages: 32 by one scale-0 op, the last one plain.
        assert_eq!(range_op_count(33, true), (1, 1));
        // 511 = 448 (scale 1, num 6) + 62 (scale 0, num 30) + 1.
        assert_eq!(range_op_count(511, true), (1, 2));
        for pages in 1..2000 {
            let (p, r) = range_op_count(pages, true);
            assert!(p <= 1 && r <= 4, "{pages}: {p} plain, {r} range");
        }
    }
}
