//! The model's event counters, after the kernel's own (`/proc/vmstat`'s `vm_event_item`, such as
//! `nr_tlb_remote_flush_received`). Each kernel file owns its counters (a struct made by
//! `counters!`, counted by that file's paths); `linux/mod.rs` gathers them, one [`Group`] per
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

        impl $crate::linux::vmstat::Group for $name {
            fn minus(&self, o: &$name) -> $name {
                $name::minus(self, o)
            }
            fn fields(&self) -> Vec<(&'static str, u64)> {
                $name::fields(self)
            }
            fn names() -> Vec<&'static str> {
                vec![$(stringify!($f)),*]
            }
        }
    };
}
pub(crate) use counters;

/// A group of `linux::Counters`: a subsystem's counter struct, or an `Option` of one for a
/// subsystem only some machines boot (absent: no fields).
pub trait Group: Copy {
    fn minus(&self, o: &Self) -> Self;
    fn fields(&self) -> Vec<(&'static str, u64)>;
    /// The names `fields` gives when the group is present.
    fn names() -> Vec<&'static str>;
}

impl<G: Group> Group for Option<G> {
    fn minus(&self, o: &Self) -> Self {
        self.zip(*o).map(|(e, s)| e.minus(&s))
    }
    fn fields(&self) -> Vec<(&'static str, u64)> {
        self.as_ref().map_or_else(Vec::new, Group::fields)
    }
    fn names() -> Vec<&'static str> {
        G::names()
    }
}

#[cfg(test)]
mod tests {
    use crate::linux::Counters;

    /// Every group present, the optional ones too.
    fn all() -> Counters {
        Counters {
            vma_lock: Some(Default::default()),
            page_alloc: Some(Default::default()),
            slab: Some(Default::default()),
            net: Some(Default::default()),
            cpumask: Some(Default::default()),
            tlbmiss: Some(Default::default()),
            arm64: Some(Default::default()),
            swap: Some(Default::default()),
            shmem_write: Some(Default::default()),
            migrate: Some(Default::default()),
            sched_delay: Some(Default::default()),
            ..Counters::default()
        }
    }

    #[test]
    fn names_are_unique_across_subsystems() {
        let names: Vec<_> = all().fields().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, Counters::names());
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
    }

    #[test]
    fn groups_partition_the_names_by_subsystem() {
        let groups = Counters::groups();
        let flat: Vec<&str> = groups.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        assert_eq!(flat, Counters::names());
        let of = |c: &str| groups.iter().find(|(_, n)| n.contains(&c)).map(|(g, _)| *g);
        assert_eq!((of("invlpg"), of("ipis_sent")), (Some("tlbflush"), Some("smp")));
        assert_eq!(of("buddy_allocs"), Some("page_alloc"));
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

    #[test]
    fn an_optional_group_is_counted_only_where_both_ends_have_it() {
        let mut end = all();
        end.slab.as_mut().unwrap().slabs_allocated = 7;
        let d = end.minus(&all());
        assert_eq!(d.slab.unwrap().slabs_allocated, 7);
        assert!(d.fields().contains(&("slabs_allocated", 7)));
        let none = end.minus(&Counters::default());
        assert_eq!((none.slab, none.page_alloc), (None, None));
        assert!(!none.fields().iter().any(|(n, _)| *n == "slabs_allocated"));
    }
}
