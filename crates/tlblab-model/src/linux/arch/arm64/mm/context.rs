//! The ASID allocator of arch/arm64/mm/context.c (as of v5.12-v6.6: the pinned-ASID form; the
//! rules below are the same in v6.18 as far as this model goes; docs/references/linux-mm.md#arm64-asids).
//!
//! One ASID per mm, the same on every CPU (unlike x86's per-CPU PCID slots): `mm->context.id`
//! holds the ASID in its low `asid_bits` and the generation above. A context switch whose mm's
//! generation is current takes the fast path (no lock, no flush). Otherwise, under
//! `cpu_asid_lock`, `new_context` re-uses the mm's old ASID if it is still free or was active on
//! some CPU at the last rollover (`reserved_asids`), else takes the next free one; when none is
//! left the generation is bumped (`flush_context`): the bitmap is reset to the ASIDs active on
//! each CPU, and every CPU is marked to flush its whole TLB (`local_flush_tlb_all`) at its next
//! slow-path switch. Pinned ASIDs (SVA) and KPTI's odd/even pairs are not modelled (no workload
//! pins an mm; the modelled parts are not Meltdown-affected).

/// The allocator's global state (`asid_generation`, `asid_map`, the per-CPU `active_asids` and
/// `reserved_asids`, `tlb_flush_pending`).
#[derive(Debug, Clone)]
pub struct AsidAllocator {
    pub bits: u32,
    generation: u64,
    map: Vec<bool>,
    cur_idx: u64,
    active: Vec<u64>,
    reserved: Vec<u64>,
    flush_pending: Vec<bool>,
    /// Rollovers (generation bumps).
    pub rollovers: u64,
}

/// What `check_and_switch_context` did on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// The ASID the CPU now runs the mm with (TTBR1's ASID field).
    pub asid: u16,
    /// Took `cpu_asid_lock` (the generation did not match, or the CPU's active ASID was reset).
    pub slow: bool,
    /// `local_flush_tlb_all`: a rollover happened since this CPU last took the slow path.
    pub flush_all: bool,
}

impl AsidAllocator {
    /// `asids_init`: generation 1, an empty map (ASID 0 is `init_mm`'s, never handed out).
    pub fn new(bits: u32, cpus: u32) -> AsidAllocator {
        AsidAllocator {
            bits,
            generation: 1 << bits,
            map: vec![false; 1 << bits],
            cur_idx: 1,
            active: vec![0; cpus as usize],
            reserved: vec![0; cpus as usize],
            flush_pending: vec![false; cpus as usize],
            rollovers: 0,
        }
    }

    fn num(&self) -> u64 {
        1 << self.bits
    }

    fn asid_of(&self, ctx: u64) -> u64 {
        ctx & (self.num() - 1)
    }

    fn gen_match(&self, ctx: u64) -> bool {
        (ctx ^ self.generation) >> self.bits == 0
    }

    /// `flush_context`: the map keeps only the ASIDs active (or still reserved) per CPU, and
    /// every CPU owes a full local flush.
    fn flush_context(&mut self) {
        self.map.iter_mut().for_each(|b| *b = false);
        for cpu in 0..self.active.len() {
            let mut a = std::mem::take(&mut self.active[cpu]);
            if a == 0 {
                a = self.reserved[cpu];
            }
            let i = self.asid_of(a) as usize;
            self.map[i] = true;
            self.reserved[cpu] = a;
        }
        self.flush_pending.iter_mut().for_each(|p| *p = true);
    }

    /// `check_update_reserved_asid`: moves every CPU's reservation of `ctx` to `new`.
    fn update_reserved(&mut self, ctx: u64, new: u64) -> bool {
        let mut hit = false;
        for r in self.reserved.iter_mut().filter(|r| **r == ctx) {
            *r = new;
            hit = true;
        }
        hit
    }

    /// `new_context` for an mm whose `context.id` is `ctx` (0: never had one).
    fn new_context(&mut self, ctx: u64) -> u64 {
        let mut generation = self.generation;
        if ctx != 0 {
            let asid = self.asid_of(ctx);
            let new = asid | generation;
            if self.update_reserved(ctx, new) {
                return new;
            }
            if !self.map[asid as usize] {
                self.map[asid as usize] = true;
                return new;
            }
        }
        let free = |m: &[bool], from: u64| (from..m.len() as u64).find(|&i| !m[i as usize]);
        let asid = match free(&self.map, self.cur_idx) {
            Some(a) => a,
            None => {
                self.generation += self.num();
                generation = self.generation;
                self.rollovers += 1;
                self.flush_context();
                free(&self.map, 1).expect("more ASIDs than CPUs")
            }
        };
        self.map[asid as usize] = true;
        self.cur_idx = asid;
        asid | generation
    }

    /// `check_and_switch_context(mm)` on `cpu`, `ctx` being the mm's `context.id` (updated).
    pub fn check_and_switch_context(&mut self, cpu: u32, ctx: &mut u64) -> Switch {
        let c = cpu as usize;
        if self.active[c] != 0 && self.gen_match(*ctx) {
            self.active[c] = *ctx;
            return Switch { asid: self.asid_of(*ctx) as u16, slow: false, flush_all: false };
        }
        if !self.gen_match(*ctx) {
            *ctx = self.new_context(*ctx);
        }
        let flush_all = std::mem::take(&mut self.flush_pending[c]);
        self.active[c] = *ctx;
        Switch { asid: self.asid_of(*ctx) as u16, slow: true, flush_all }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mm_keeps_one_asid_on_every_cpu_and_the_fast_path_after_the_first_switch() {
        let mut a = AsidAllocator::new(8, 4);
        let (mut m0, mut m1) = (0, 0);
        let s = a.check_and_switch_context(0, &mut m0);
        assert_eq!((s.asid, s.slow, s.flush_all), (1, true, false));
        assert_eq!(a.check_and_switch_context(1, &mut m0).asid, 1);
        assert_eq!(a.check_and_switch_context(0, &mut m1).asid, 2);
        let again = a.check_and_switch_context(0, &mut m0);
        assert_eq!((again.asid, again.slow), (1, false));
    }

    #[test]
    fn running_out_bumps_the_generation_and_every_cpu_flushes_once() {
        // 8 bits: ASIDs 1..=255 for new mms, then a rollover.
        let mut a = AsidAllocator::new(8, 2);
        let mut running = 0;
        a.check_and_switch_context(1, &mut running);
        let mut ctxs = vec![0u64; 300];
        let mut flushes = 0;
        for c in ctxs.iter_mut() {
            flushes += a.check_and_switch_context(0, c).flush_all as u32;
        }
        assert_eq!(a.rollovers, 1);
        assert_eq!(flushes, 1, "CPU 0 flushes at its first slow switch after the rollover");
        // CPU 1's mm was active at the rollover: it keeps its ASID in the new generation, and
        // CPU 1 owes one flush, at its next slow-path switch.
        let s = a.check_and_switch_context(1, &mut running);
        assert_eq!((s.asid, s.slow, s.flush_all), (1, true, true));
        assert_eq!(a.check_and_switch_context(1, &mut running).flush_all, false);
        // No two current mms share an ASID.
        let mut seen = std::collections::BTreeSet::new();
        for c in ctxs.iter().filter(|&&c| a.gen_match(c)).chain([&running]) {
            assert!(seen.insert(a.asid_of(*c)), "ASID {} twice", a.asid_of(*c));
        }
    }
}
