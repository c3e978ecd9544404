//! The model's event counters, after the kernel's own (`/proc/vmstat`'s `vm_event_item`, such as
//! `nr_tlb_remote_flush_received`). Each kernel file owns its counters (a struct made by
//! [`counters!`], counted by that file's paths); `linux/mod.rs` gathers them, one field per
//! subsystem, into [`super::Counters`], which the engine reads at the measured window's edges.
//! Reports see one flat list of names (`fields`), the same whichever file counts an event. A leaf:
//! this file imports nothing of the model.

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

#[cfg(test)]
mod tests {
    use crate::linux::Counters;

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
