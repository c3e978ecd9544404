//! The MPC8xx TLB-miss counters of seed 003's `/proc/tlbmiss` (Marcelo Tosatti's instrumentation
//! patch, not found: the split by user and kernel is taken to follow the handlers' own test, the
//! faulting EA against 0x80000000, linux/arch/ppc/kernel/head_8xx.rs `KERNEL_SPACE`), and where the
//! time went: the handler clocks per miss kind, and user against system time as the 2.4/2.6 tick
//! accounting splits it (the mode the CPU was in when the exception was taken: a miss taken in
//! user mode is user time, one taken inside a system call system time).
//!
//! An optional group of `linux::Counters`, present on a software-loaded-TLB machine only: an x86
//! run's counter map has none of these names.

crate::linux::vmstat::counters! {
    /// Event counters and clocks of the 8xx TLB and its miss handlers.
    Counters {
        /// InstructionTLBMiss for an EA below 0x80000000.
        itlb_miss_user,
        /// InstructionTLBMiss for a kernel EA.
        itlb_miss_kernel,
        /// DataStoreTLBMiss (0x1200), user EA.
        dtlb_miss_user,
        dtlb_miss_kernel,
        /// DataTLBError (0x1400): first store through a clean entry.
        dtlb_error,
        /// Handler clocks (exception entry to `rfi`, cache stalls included), per kind.
        itlb_user_clocks,
        itlb_kernel_clocks,
        dtlb_user_clocks,
        dtlb_kernel_clocks,
        dtlb_error_clocks,
        /// Of the handler clocks: waiting for the I- and D-cache (handler text, level-1 entry, PTE).
        handler_cache_stall_clocks,
        /// Clocks in user mode (dd's loop, its misses) and in the kernel (system calls, writeback,
        /// timer ticks, their misses): what `time` reports as user and sys.
        user_clocks,
        sys_clocks,
        /// Clocks of kernel threads (bdflush, pdflush writeback): real time, not dd's user or sys.
        kthread_clocks,
        /// Switches to a writeback thread and back.
        kthread_switches,
        /// I-cache and D-cache misses outside the handlers (the paths' own fetches and data).
        icache_misses,
        dcache_misses,
        /// Instructions the paths executed (16-byte lines fetched x 4), handlers not included.
        instructions,
        /// Where the paths' own clocks go (handlers apart): issuing their instructions is
        /// `instructions` x `alu_cycles`; these are the I-cache stalls of their fetches and the
        /// clocks of their data accesses (loads, stores, write-through bus writes, D-cache misses).
        icache_stall_clocks,
        data_clocks,
        /// Clocks of the timer interrupts (the tick's paths and their misses), part of sys.
        tick_clocks,
        /// `tlbia` at a context switch (2.4.0 `set_context`).
        context_tlbia,
        /// Pages written back to the RAM disk, and timer interrupts taken.
        pages_written_back,
        timer_ticks,
    }
}

/// The counters whose sum is the miss handlers' clocks (every kind, cache stalls included):
/// what a report subtracts from a block's clocks to get the paths' own.
pub const HANDLER_CLOCKS: [&str; 5] =
    ["itlb_user_clocks", "itlb_kernel_clocks", "dtlb_user_clocks", "dtlb_kernel_clocks", "dtlb_error_clocks"];

#[cfg(test)]
mod tests {
    #[test]
    fn handler_clocks_name_counters() {
        let names: Vec<&str> = super::Counters::default().fields().iter().map(|(n, _)| *n).collect();
        for n in super::HANDLER_CLOCKS {
            assert!(names.contains(&n), "{n} is not a tlbmiss counter");
        }
    }
}
