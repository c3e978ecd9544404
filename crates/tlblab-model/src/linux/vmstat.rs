//! The model's event counters, after the kernel's own (`/proc/vmstat`'s `vm_event_item`, such as
//! `nr_tlb_remote_flush_received`). Each kernel file owns its counters (a struct made by
//! [`counters!`], counted by that file's paths); [`Counters`] gathers them, one field per
//! subsystem, and is read by the engine at the measured window's edges. Reports see one flat list
//! of names (`fields`), the same whichever file counts an event.

/// Defines a counter struct from one list of fields, with the window difference and the named
/// list reports print: a new counter is one line in its subsystem's list.
macro_rules! counters {
    ($(#[$sdoc:meta])* $name:ident { $($(#[$doc:meta])* $f:ident,)* }) => {
        $(#[$sdoc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$doc])* pub $f: u64,)*
        }

        impl $name {
            pub fn minus(&self, o: &$name) -> $name {
                $name { $($f: self.$f - o.$f),* }
            }

            /// `(name, value)` pairs in a fixed order, for reports.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($f), self.$f)),*]
            }
        }
    };
}
pub(crate) use counters;

/// Defines [`Counters`], one field per subsystem's counter struct.
macro_rules! subsystems {
    ($($f:ident: $t:ty,)*) => {
        /// Event counters of a run, by the kernel file that counts them.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counters {
            $(pub $f: $t,)*
        }

        impl Counters {
            pub fn minus(&self, o: &Counters) -> Counters {
                Counters { $($f: self.$f.minus(&o.$f)),* }
            }

            /// Every subsystem's `(name, value)` pairs, subsystem by subsystem.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                let mut all = Vec::new();
                $(all.extend(self.$f.fields());)*
                all
            }
        }
    };
}

subsystems! {
    tlbflush: crate::linux::arch::x86::mm::tlb::Counters,
    smp: crate::linux::kernel::smp::Counters,
    memory: crate::linux::mm::memory::Counters,
    mmu_gather: crate::linux::mm::mmu_gather::Counters,
    mmap: crate::linux::mm::mmap::Counters,
    sched: crate::linux::kernel::sched::core::Counters,
    tick_sched: crate::linux::kernel::time::tick_sched::Counters,
    text: crate::linux::arch::x86::text::Counters,
    oracle: super::oracle::Counters,
    vmscan: crate::linux::mm::vmscan::Counters,
    filemap: crate::linux::mm::filemap::Counters,
    pipe: crate::linux::fs::pipe::Counters,
    af_unix: crate::linux::net::unix::af_unix::Counters,
    namei: crate::linux::fs::namei::Counters,
    dcache: crate::linux::fs::dcache::Counters,
    ext4: crate::linux::fs::ext4::Counters,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_across_subsystems() {
        let names: Vec<_> = Counters::default().fields().into_iter().map(|(n, _)| n).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
    }

    #[test]
    fn window_difference_is_per_field() {
        let mut a = Counters::default();
        a.tlbflush.invlpg = 5;
        a.smp.ipis_sent = 3;
        let mut b = a;
        b.tlbflush.invlpg = 9;
        let d = b.minus(&a);
        assert_eq!((d.tlbflush.invlpg, d.smp.ipis_sent), (4, 0));
        assert!(d.fields().contains(&("invlpg", 4)));
    }
}
