//! The address space's knobs (mm/mmap.c, mm/memory.c): mmap_lock, where faults lock, munmap's downgrade, when freed pages go back relative to the flush.

use super::*;

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "mmap_lock",
        section: "mm",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "faults and mmap/munmap/madvise take mmap_lock; off is an ablation",
        apply: |k, v| on_off(v).map(|b| k.mm.mmap_lock = b),
    },
    Knob {
        name: "fault_lock",
        section: "mm",
        needed: Needed::Refines,
        allowed: "mmap-lock | per-vma | per-vma-file",
        doc: "mmap-lock: every fault takes mmap_lock for read (to v6.3); per-vma: v6.4's \
              lock_vma_under_rcu first, anonymous VMAs with an anon_vma only, mmap_lock on failure; \
              munmap write-locks the VMA it removes; per-vma-file: v6.7, file-backed VMAs too (a \
              COW fault still needs the anon_vma) (default mmap-lock)",
        apply: |k, v| {
            k.mm.fault_lock = match v {
                "mmap-lock" => FaultLock::MmapLock,
                "per-vma" => FaultLock::PerVma,
                "per-vma-file" => FaultLock::PerVmaFile,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "munmap_downgrade",
        section: "mm",
        needed: Needed::Refines,
        allowed: "on | off",
        doc: "munmap downgrades mmap_lock to read after detaching the VMA and zaps, flushes and \
              frees under the read lock (v4.20+); off: held for write throughout (default off)",
        apply: |k, v| on_off(v).map(|b| k.mm.munmap_downgrade = b),
    },
    Knob {
        name: "rwsem_slowpath",
        section: "mm",
        needed: Needed::Refines,
        allowed: "off | grant | steal",
        doc: "mmap_lock's contended path: grant = lib/rwsem.c to v3.9 (slow paths under wait_lock, \
              the waker pays try_to_wake_up per task it wakes, a release grants the head writer); \
              steal = v3.10-v3.15 rwsem-xadd (a head writer is woken without the lock and a running \
              writer may steal it); off = the lock's queue only (default off)",
        apply: |k, v| {
            k.mm.rwsem_slowpath = match v {
                "off" => RwsemSlowpath::Off,
                "grant" => RwsemSlowpath::Grant,
                "steal" => RwsemSlowpath::Steal,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "free_before_flush",
        section: "mm",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "UNSAFE: frees pages before the TLB flush; for the oracle",
        apply: |k, v| on_off(v).map(|b| k.mm.free_before_flush = b),
    },
    Knob {
        name: "fault_around",
        section: "mm",
        needed: Needed::Newer,
        allowed: "window | folio",
        doc: "what a read fault on a file maps besides its page: window (fault_around_bytes, 16 \
              pages aligned), folio (v6.18: the whole large folio of each page in the window, and of \
              the faulting page, where it lies inside the VMA and the fault's page table)",
        apply: |k, v| {
            k.mm.fault_around = match v {
                "window" => FaultAround::Window,
                "folio" => FaultAround::Folio,
                _ => return Err(None),
            };
            Ok(())
        },
    },
];
