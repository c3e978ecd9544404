//! Kernel presets: the knob bundles the seeds name as columns, one TOML file each in
//! `kernels/` (embedded at build time; see [`super::config`] for the format). Every knob stays
//! settable on its own (`KernelConfig::set`); a user's own preset file loads with
//! [`KernelConfig::from_file_text`].

use super::config::KernelConfig;

use crate::builtin::KERNELS;

/// The built-in presets: (name, what it models), in version order.
pub fn presets() -> impl Iterator<Item = (&'static str, String)> {
    KERNELS
        .iter()
        .map(|(name, _)| (*name, KernelConfig::preset(name).map(|k| k.description).unwrap_or_default()))
}

impl KernelConfig {
    /// A built-in preset by name.
    pub fn preset(name: &str) -> Result<KernelConfig, String> {
        let Some(text) = crate::builtin::find(KERNELS, name) else {
            let names = crate::builtin::names(KERNELS);
            return Err(format!("unknown kernel preset `{name}`; presets: {}", names.join(", ")));
        };
        KernelConfig::from_toml(name, &format!("kernels/{name}.toml"), text, KernelConfig::preset)
    }

    /// A preset file of the user's (`origin`: its path): named after the file, and it may
    /// inherit a built-in preset.
    pub fn from_file_text(name: &str, origin: &str, text: &str) -> Result<KernelConfig, String> {
        KernelConfig::from_toml(name, origin, text, KernelConfig::preset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::arch::x86::mm::tlb::{CoalesceIpis, FlushKnobs, LazyIpis, RangePolicy, ReadTlbGen};

    #[test]
    fn reclaim_reads_flushed_memcg_statistics_from_the_v6_12_presets_on() {
        use crate::linux::mm::vmscan::{MemcgStats, Workingset};
        let r = |name: &str| KernelConfig::preset(name).unwrap().reclaim;
        for old in ["4.1", "5.12", "5.18.1", "6.6", "6.7"] {
            assert_eq!(r(old).memcg_stats, MemcgStats::Exact, "{old}");
        }
        for new in ["6.13", "6.14", "6.15", "6.18", "6.18+drain"] {
            assert_eq!(r(new).memcg_stats, MemcgStats::Ratelimited, "{new}");
            assert_eq!(r(new).workingset, Workingset::ActivateAndDeactivate, "{new}");
        }
    }

    #[test]
    fn every_preset_builds_and_seed_002_columns_differ_only_in_their_knobs() {
        for (name, _) in KERNELS {
            KernelConfig::preset(name).unwrap();
        }
        let base = KernelConfig::preset("5.18.1").unwrap().flush;
        let patch = KernelConfig::preset("5.18.1+patch").unwrap().flush;
        assert_eq!(FlushKnobs { early_return: true, read_tlb_gen: ReadTlbGen::WhenNeeded, ..base }, patch);
    }

    #[test]
    fn seed_000_columns_on_ivy_bridge() {
        let text = crate::builtin::profile("ivybridge-4c8t");
        let p: crate::profile::MachineProfile = toml::from_str(text).unwrap();
        let policy = |name: &str| {
            crate::linux::Kernel::boot(&p, KernelConfig::preset(name).unwrap()).effective_knobs().flush.policy
        };
        assert_eq!(policy("3.4"), RangePolicy::AlwaysFull);
        assert_eq!(policy("3.13"), RangePolicy::FlushallShift { shift: 1, post_fix: false, huge_walk: true });
        assert_eq!(
            policy("3.13-altershift"),
            RangePolicy::FlushallShift { shift: 2, post_fix: true, huge_walk: true }
        );
        assert_eq!(
            policy("3.13-nowalk"),
            RangePolicy::FlushallShift { shift: 2, post_fix: true, huge_walk: false }
        );
        assert_eq!(policy("3.17"), RangePolicy::Ceiling(33));
    }

    #[test]
    fn lazy_cpus_get_flush_ipis_up_to_v4_19() {
        for (name, _) in KERNELS.iter().filter(|(n, _)| !n.ends_with("-8xx")) {
            // The preset's version: `4.9-hopcpu` -> (4, 9).
            let v: Vec<u32> =
                name.split(['-', '+']).next().unwrap().split('.').map(|n| n.parse().unwrap()).collect();
            let want = if (v[0], v[1]) <= (4, 19) { LazyIpis::Send } else { LazyIpis::Skip };
            assert_eq!(KernelConfig::preset(name).unwrap().flush.lazy_ipis, want, "{name}");
        }
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        k.set("lazy_ipis", "send").unwrap();
        assert_eq!(k.flush.lazy_ipis, LazyIpis::Send);
        let e = k.set("lazy_ipis", "sometimes").unwrap_err();
        assert!(e.contains("lazy_ipis") && e.contains("send | skip"), "{e}");
    }

    /// The v5.12-v5.18 flush-path history (docs/references/linux-6x.md#flush-path-history): each
    /// link differs from the one before in the knobs its commits changed.
    #[test]
    fn the_5_12_to_5_18_chain_changes_the_local_flush_and_the_lazy_test() {
        use crate::linux::arch::x86::mm::tlb::LazyTest;
        let k = |n: &str| KernelConfig::preset(n).unwrap();
        let (v12, v13, v18) = (k("5.12"), k("5.13"), k("5.18"));
        assert_eq!((v12.flush.concurrent_local, v12.flush.lazy_test), (false, LazyTest::InQueue));
        // 4ce94eabac16 (concurrent local flush) and 6035152d8eeb (the test before queueing).
        assert_eq!(
            FlushKnobs { concurrent_local: true, lazy_test: LazyTest::BeforeQueue, ..v12.flush },
            v13.flush
        );
        // d39268ad24c0 reverts the test only; v5.14's allocator came in between.
        assert_eq!(FlushKnobs { lazy_test: LazyTest::InQueue, ..v13.flush }, v18.flush);
        assert_eq!(v18.page_alloc, crate::linux::mm::page_alloc::PageAllocConfig::v5_14());
        assert!(v12.mm.munmap_downgrade && v18.mm.munmap_downgrade);
        // Seed 002's 5.18.1 keeps the older stand-in (the test before queueing), so its pinned
        // results stand; in every other knob it is the faithful 5.18 less the munmap downgrade.
        let seed = k("5.18.1");
        assert_eq!(FlushKnobs { lazy_test: LazyTest::InQueue, ..seed.flush }, v18.flush);
        let mut s = k("5.18.1");
        let e = s.set("lazy_test", "late").unwrap_err();
        assert!(e.contains("lazy_test") && e.contains("before-queue | in-queue"), "{e}");
    }

    #[test]
    fn every_preset_has_an_allocator_era_of_its_version() {
        use crate::linux::mm::page_alloc::PageAllocConfig;
        let pa = |name: &str| KernelConfig::preset(name).unwrap().page_alloc;
        assert_eq!(pa("4.9"), PageAllocConfig::v4_9());
        assert_eq!(pa("4.9-hopcpu"), PageAllocConfig::v4_9_hopcpu());
        assert_eq!(pa("5.14"), PageAllocConfig::v5_14());
        // 5.18 keeps 5.14's rules; v3.x has 4.9's order-0 lists with the pre-v4.6 watermarks.
        assert_eq!(pa("5.18.1"), PageAllocConfig::v5_14());
        assert_eq!(pa("5.18.1+patch"), PageAllocConfig::v5_14());
        for v3 in ["3.4", "3.13", "3.13-altershift", "3.17"] {
            assert_eq!(
                pa(v3),
                PageAllocConfig { watermark_scale_factor: 0, ..PageAllocConfig::v4_9() },
                "{v3}"
            );
        }
        // The two seed-004 columns differ in their allocator only.
        let (a, b) = (KernelConfig::preset("4.9").unwrap(), KernelConfig::preset("4.9-hopcpu").unwrap());
        assert_eq!((a.flush, a.mm, a.text), (b.flush, b.mm, b.text));
        let mut k = KernelConfig::preset("4.9").unwrap();
        k.set("era", "5.14").unwrap();
        k.set("pcp_high", "six-batch").unwrap();
        assert_eq!(
            k.page_alloc,
            PageAllocConfig {
                high: crate::linux::mm::page_alloc::PcpHigh::SixBatch,
                ..PageAllocConfig::v5_14()
            }
        );
        let e = k.set("era", "4.10").unwrap_err();
        assert!(e.contains("knob `era`") && e.contains("4.9 | 4.9-hopcpu | 5.14"), "{e}");
    }

    #[test]
    fn a_bad_page_alloc_section_names_file_key_and_allowed_values() {
        let err = |text: &str| KernelConfig::from_file_text("bad", "bad.toml", text).unwrap_err();
        let e = err("inherits = \"4.9\"\n[page_alloc]\nera = \"4.10\"\n");
        assert!(
            e.starts_with("bad.toml: key `page_alloc.era`") && e.contains("4.9 | 4.9-hopcpu | 5.14"),
            "{e}"
        );
        let e = err("inherits = \"4.9\"\n[page_alloc]\nbatch = 7\n");
        assert!(e.contains("unknown key `page_alloc.batch`") && e.contains("pcp_lists"), "{e}");
        let e = err("inherits = \"4.9\"\n[page_alloc]\npcp_drain = \"all\"\n");
        assert!(
            e.contains("`page_alloc.pcp_drain`") && e.contains("batch-entries | batch-pages | free-factor"),
            "{e}"
        );
        let e = err("inherits = \"4.9\"\n[page_alloc]\nwatermark_scale_factor = 5000\n");
        assert!(e.contains("`page_alloc.watermark_scale_factor`") && e.contains("0..1000"), "{e}");
        // A complete preset names its era.
        let full = crate::builtin::find(KERNELS, "4.9").unwrap();
        let e = err(&full.replace("era = \"4.9\"", ""));
        assert!(e.contains("key `page_alloc.era` is missing"), "{e}");
    }

    #[test]
    fn knobs_set_alone_and_errors_list_the_allowed_values() {
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        k.set("ceiling", "64").unwrap();
        k.set("read_tlb_gen", "never").unwrap();
        assert_eq!(k.flush.policy, RangePolicy::Ceiling(64));
        assert_eq!(k.flush.read_tlb_gen, ReadTlbGen::Never);
        let e = k.set("read_tlb_gen", "sometimes").unwrap_err();
        assert!(e.contains("always | when-needed | never"), "{e}");
        let e = k.set("warp", "9").unwrap_err();
        assert!(e.contains("unknown knob") && e.contains("early_return"), "{e}");
        assert!(KernelConfig::preset("2.6.9").unwrap_err().contains("5.18.1+patch"));
        k.set("flushall_shift", "2").unwrap();
        assert_eq!(k.flush.policy, RangePolicy::FlushallShift { shift: 2, post_fix: true, huge_walk: false });
    }

    #[test]
    fn the_seed_ideas_are_knob_values_off_by_default() {
        // Seed 000's dropped v1 rule: only with the flushall-shift policy, off in every preset.
        for (name, _) in presets() {
            let k = KernelConfig::preset(name).unwrap();
            assert!(!k.flush.range_cpus, "{name}");
        }
        let mut k = KernelConfig::preset("3.13").unwrap();
        k.set("range_cpus", "on").unwrap();
        assert!(k.flush.range_cpus);
        let mut k = KernelConfig::preset("3.17").unwrap();
        let e = k.set("range_cpus", "on").unwrap_err();
        assert!(e.contains("range_policy=flushall-shift"), "{e}");
        // Seed 004's: pcp->high as a page count, batch unchanged; words and bounds refused.
        let mut k = KernelConfig::preset("4.9").unwrap();
        k.set("pcp_high", "682").unwrap();
        assert_eq!(k.page_alloc.pcp_high(31, 0, 4), 682);
        assert_eq!(k.page_alloc.zone_batchsize(1 << 20), 31);
        for bad in ["0", "lots", "2000000"] {
            let e = k.set("pcp_high", bad).unwrap_err();
            assert!(e.contains("auto-tune | pages 1..=1048576"), "{bad}: {e}");
        }
    }

    #[test]
    fn every_3x_preset_is_complete_and_the_v3_13_family_inherits_its_table() {
        let k = KernelConfig::preset("3.4").unwrap();
        assert_eq!(k.flush.policy, RangePolicy::AlwaysFull);
        assert!(
            k.flush.coalesce_ipis == CoalesceIpis::Off
                && !k.flush.generations
                && !k.flush.pti
                && k.mm.mmap_lock
        );
        let walk = KernelConfig::preset("3.13").unwrap();
        assert_eq!(walk.shift_from_table, Some(false));
        let alt = KernelConfig::preset("3.13-altershift").unwrap();
        assert_eq!(alt.shift_from_table, Some(true));
        assert_eq!(
            alt.flush.policy,
            RangePolicy::FlushallShift { shift: 6, post_fix: true, huge_walk: true }
        );
        assert_eq!(
            KernelConfig::preset("3.13-nowalk").unwrap().knobs().flush,
            FlushKnobs {
                policy: RangePolicy::FlushallShift { shift: 6, post_fix: true, huge_walk: false },
                ..alt.flush
            }
        );
        let names: Vec<_> = presets().map(|p| p.0).collect();
        assert_eq!(names[..4], ["2.4-8xx", "2.6-8xx", "3.4", "3.13"], "version order");
        assert!(presets().all(|(_, d)| !d.is_empty()), "every preset says what it models");
    }

    #[test]
    fn a_user_preset_inherits_a_built_in_one_and_bad_ones_name_file_key_and_allowed_values() {
        let mine = "description = \"mine\"\ninherits = \"5.18.1\"\n[flush]\nceiling = 64\n[mm]\nmmap_lock = \"off\"\n";
        let k = KernelConfig::from_file_text("mine", "my.toml", mine).unwrap();
        assert_eq!(
            (k.name.as_str(), k.flush.policy, k.mm.mmap_lock),
            ("mine", RangePolicy::Ceiling(64), false)
        );
        assert_eq!(k.flush.read_tlb_gen, ReadTlbGen::Always);
        let err = |text: &str| KernelConfig::from_file_text("bad", "bad.toml", text).unwrap_err();
        let e = err("inherits = \"5.18.1\"\n[flush]\nread_tlb_gen = \"sometimes\"\n");
        assert!(
            e.starts_with("bad.toml: key `flush.read_tlb_gen`") && e.contains("always | when-needed | never"),
            "{e}"
        );
        let e = err("inherits = \"5.18.1\"\n[flush]\nmmap_lock = true\n");
        assert!(e.contains("`flush.mmap_lock`") && e.contains("early_return"), "{e}");
        let e = err("inherits = \"2.6.9\"\n");
        assert!(e.contains("key `inherits`") && e.contains("5.18.1+patch"), "{e}");
        let e = err("[flush]\nrange_policy = \"ceiling\"\n");
        assert!(e.contains("key `flush.ceiling` is missing"), "{e}");
        let e = err("[vm]\n");
        assert!(
            e.contains("unknown key `vm`")
                && e.contains("flush, mm, text, ppc8xx, page_alloc")
                && e.contains("sched"),
            "{e}"
        );
        let e = err("inherits = \"5.18.1\"\n[flush]\nceiling = 1.5\n");
        assert!(e.contains("`flush.ceiling`"), "{e}");
        let e = err("inherits = \"5.18.1\"\n[flush]\npost_fix = true\n");
        assert!(e.contains("flushall-shift"), "{e}");
        // A TOML syntax error: one line with the file, line and column.
        let e = err("[flush\n");
        assert!(e.starts_with("bad.toml:1:") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn merged_in_names_the_release_and_is_not_inherited() {
        assert_eq!(KernelConfig::preset("5.18.1+patch").unwrap().merged_in.as_deref(), Some("6.0"));
        assert_eq!(KernelConfig::preset("5.18.1").unwrap().merged_in, None);
        let child = KernelConfig::from_file_text("c", "c.toml", "inherits = \"5.18.1+patch\"\n").unwrap();
        assert_eq!(child.merged_in, None);
        let e = KernelConfig::from_file_text("c", "c.toml", "inherits = \"5.18.1\"\nmerged_in = \"v6\"\n")
            .unwrap_err();
        assert!(e.contains("c.toml: key `merged_in`") && e.contains("6.0"), "{e}");
    }
}
