//! What a tracer reads of each CPU, as Linux's tracepoints expose it to ftrace and perf
//! (kernel/trace/): the state `tlblab run --timeline` samples between steps
//! (engine/timeline.rs). Read-only: nothing here changes the kernel or costs simulated time.

use crate::linux::Kernel;

impl Kernel {
    /// `cpu_tlbstate_shared.is_lazy` (x86, v4.20+; the mirror `tlb_is_not_lazy` reads): the CPU
    /// runs a kernel thread or idles on a borrowed mm (false where no kernel marks it).
    pub fn trace_is_lazy(&self, cpu: u32) -> bool {
        self.arch.x86.lazy.contains(cpu)
    }

    /// Requests on the CPU's `call_single_queue` not taken yet (kernel/smp.c).
    pub fn trace_call_queue_len(&self, cpu: u32) -> u64 {
        self.smp.csqs.get(cpu as usize).map_or(0, |q| q.entries.len() as u64)
    }

    /// Pages on the inactive and active file LRU lists, every zone's; none where reclaim is not
    /// modelled (a profile without `[reclaim]`).
    pub fn trace_file_lru(&self) -> Option<(u64, u64)> {
        let v = &self.mm.vmscan;
        v.costs.as_ref()?;
        Some(
            v.lruvecs
                .iter()
                .fold((0, 0), |(i, a), l| (i + l.inactive_file.pages(), a + l.active_file.pages())),
        )
    }

    /// The task the CPU runs, if any.
    pub fn trace_task(&self, cpu: u32) -> Option<usize> {
        self.cpus[cpu as usize].task
    }

    /// The socket and the core of `cpu`.
    pub fn trace_place(&self, cpu: u32) -> (u32, u32) {
        (self.topo.socket_of(cpu), self.topo.core_of(cpu))
    }

    /// The names of the CPU's TLB structures, in the order [`Self::trace_tlb_entries`] counts.
    pub fn trace_tlb_names(&self, cpu: u32) -> Vec<String> {
        let c = &self.cpus[cpu as usize];
        self.tlbs[c.core].specs().iter().map(|s| s.name.clone()).collect()
    }

    /// Valid entries per TLB structure of `cpu` (its logical processor's side of each: flushed
    /// entries are gone), into `out`.
    pub fn trace_tlb_entries(&self, cpu: u32, out: &mut Vec<u64>) {
        let c = &self.cpus[cpu as usize];
        out.clear();
        out.extend(self.tlbs[c.core].arrays(c.lp).iter().map(|a| a.entries().count() as u64));
    }
}
