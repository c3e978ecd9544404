//! The model's event counters, after the kernel's own (`/proc/vmstat`'s `vm_event_item`, such as
//! `nr_tlb_remote_flush_received`): one list, counted by the kernel paths, read by the engine at
//! the measured window's edges.

/// Defines [`Counters`] from one list of fields, with the window difference and the named list
/// reports print: a new counter is one line here.
macro_rules! counters {
    ($($(#[$doc:meta])* $f:ident,)*) => {
        /// Event counters of a run.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[$doc])* pub $f: u64,)*
        }

        impl Counters {
            pub fn minus(&self, o: &Counters) -> Counters {
                Counters { $($f: self.$f - o.$f),* }
            }

            /// `(name, value)` pairs in a fixed order, for reports.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($f), self.$f)),*]
            }
        }
    };
}
pub(crate) use counters;

counters! {
    flush_requests,
    shootdowns,
    ipis_sent,
    ipis_received,
    /// Remote `flush_tlb_func` calls (`nr_tlb_remote_flush_received`, the TLB row of
    /// /proc/interrupts): one per queued request, however many one interrupt drains.
    remote_flushes_received,
    invlpg,
    full_flushes,
    partial_flushes,
    flushes_skipped,
    early_returns,
    tlb_gen_reads,
    tlb_gen_transfers,
    tlb_misses,
    /// Misses on a translation a flush had removed from this CPU's TLB (not a fault's retry).
    tlb_misses_after_flush,
    page_faults,
    cow_flushes,
    pages_zeroed,
    pages_copied,
    pages_freed,
    context_switches,
    /// Tasks that slept on `mmap_lock`.
    mmap_lock_sleeps,
    /// Full flushes at a switch into an mm the CPU had fallen behind on (leaving lazy mode, or
    /// an ASID slot whose generation is stale).
    switch_flushes,
    /// Flushes of the user PCID on the way back to user space, deferred there by full flushes
    /// (or, without INVPCID, single-page ones) under page-table isolation.
    pti_user_flushes,
    /// Kernel code/data translations that missed every TLB level (kernel/text.rs).
    kernel_tlb_misses,
    /// Lazy TLB CPUs that left the mm on a flush IPI (`leave_mm` / switch to `init_mm`).
    lazy_leaves,
    /// Flushes forced inside the zap because it cleared dirty shared-file PTEs (v5.18
    /// `zap_pte_range`: flush before the page-table lock drops and the page is dirtied).
    dirty_pte_flushes,
    /// Whole-mm flushes `tlb_finish_mmu` added because another thread's gather was in flight
    /// (`mm_tlb_flush_nested`).
    nested_flushes,
    oracle_violations,
}
