//! Kernel presets: the knob bundles the seeds name as columns, one TOML file each in
//! `kernels/` (embedded at build time; see [`super::config`] for the format). Every knob stays
//! settable on its own (`KernelConfig::set`); a user's own preset file loads with
//! [`KernelConfig::from_file_text`].

use super::config::KernelConfig;

include!(concat!(env!("OUT_DIR"), "/builtin_kernels.rs"));

/// The built-in presets: (name, what it models), in version order.
pub fn presets() -> impl Iterator<Item = (&'static str, String)> {
    BUILTIN
        .iter()
        .map(|(name, _)| (*name, KernelConfig::preset(name).map(|k| k.description).unwrap_or_default()))
}

impl KernelConfig {
    /// A built-in preset by name.
    pub fn preset(name: &str) -> Result<KernelConfig, String> {
        let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = BUILTIN.iter().map(|p| p.0).collect();
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
    use crate::kernel::tlbflush::{FlushKnobs, LazyIpis, RangePolicy, ReadTlbGen};

    #[test]
    fn every_preset_builds_and_seed_002_columns_differ_only_in_their_knobs() {
        for (name, _) in BUILTIN {
            KernelConfig::preset(name).unwrap();
        }
        let base = KernelConfig::preset("5.18.1").unwrap().flush;
        let patch = KernelConfig::preset("5.18.1+patch").unwrap().flush;
        assert_eq!(FlushKnobs { early_return: true, read_tlb_gen: ReadTlbGen::WhenNeeded, ..base }, patch);
    }

    #[test]
    fn seed_000_columns_on_ivy_bridge() {
        let text = include_str!("../../../../profiles/ivybridge-4c8t.toml");
        let p: crate::profile::MachineProfile = toml::from_str(text).unwrap();
        let policy = |name: &str| {
            crate::kernel::Kernel::boot(&p, KernelConfig::preset(name).unwrap())
                .effective_knobs()
                .flush
                .policy
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
    fn lazy_cpus_get_flush_ipis_up_to_v4_18() {
        for (name, _) in BUILTIN.iter().filter(|(n, _)| !n.ends_with("-8xx")) {
            let want = if name.starts_with("3.") { LazyIpis::Send } else { LazyIpis::Skip };
            assert_eq!(KernelConfig::preset(name).unwrap().flush.lazy_ipis, want, "{name}");
        }
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        k.set("lazy_ipis", "send").unwrap();
        assert_eq!(k.flush.lazy_ipis, LazyIpis::Send);
        let e = k.set("lazy_ipis", "sometimes").unwrap_err();
        assert!(e.contains("lazy_ipis") && e.contains("send | skip"), "{e}");
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
    fn every_3x_preset_is_complete_and_the_v3_13_family_inherits_its_table() {
        let k = KernelConfig::preset("3.4").unwrap();
        assert_eq!(k.flush.policy, RangePolicy::AlwaysFull);
        assert!(!k.flush.coalesce_ipis && !k.flush.generations && !k.flush.pti && k.mm.mmap_lock);
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
        let e = err("[sched]\n");
        assert!(e.contains("unknown key `sched`") && e.contains("flush, mm, text"), "{e}");
        let e = err("inherits = \"5.18.1\"\n[flush]\nceiling = 1.5\n");
        assert!(e.contains("`flush.ceiling`"), "{e}");
        let e = err("inherits = \"5.18.1\"\n[flush]\npost_fix = true\n");
        assert!(e.contains("flushall-shift"), "{e}");
        // A TOML syntax error: one line with the file, line and column.
        let e = err("[flush\n");
        assert!(e.starts_with("bad.toml:1:") && !e.contains('\n'), "{e}");
    }
}
