//! Kernel presets: the knob bundles the seeds name as columns. Every knob stays settable on its
//! own (`KernelConfig::set`).

use super::tlbflush::{FlushKnobs, LazyIpis, RangePolicy, ReadTlbGen};

/// A named kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    pub name: String,
    pub flush: FlushKnobs,
    /// The range policy is derived from the machine for `flushall_shift` presets: `None` means
    /// "use the per-family shift table" (`post_fix` chooses the table).
    pub shift_from_table: Option<bool>,
}

/// (name, what it models).
pub const PRESETS: &[(&str, &str)] = &[
    ("3.4", "v3.4.69: no x86 range flush, every flush_tlb_mm_range is a full flush"),
    ("3.13", "v3.13-rc3: tlb_flushall_shift per family (Ivy Bridge 1), huge-page walk"),
    ("3.13-altershift", "v3.13-rc3 + Mel Gorman's fix: post-fix formula, Ivy Bridge shift 2, walk kept"),
    ("3.13-nowalk", "altershift without the has_large_page() walk (the v3.14 result)"),
    ("3.17", "v3.17+: tlb_single_page_flush_ceiling = 33, generation-less handler"),
    ("5.18.1", "v5.18.1: ceiling 33, concurrent local flush, mm->tlb_gen read at handler entry"),
    ("5.18.1+patch", "v5.18.1 + 'x86/mm/tlb: avoid reading mm_tlb_gen when possible' (v6.0)"),
    ("5.18.1-early-return-touch", "early return, but mm->tlb_gen always read (Andy Lutomirski's question)"),
    ("5.18.1-no-tlb-gen", "early return, mm->tlb_gen never read by flush_tlb_func"),
];

/// (knob, allowed values).
pub const KNOBS: &[(&str, &str)] = &[
    ("range_policy", "always-full | flushall-shift | ceiling"),
    ("ceiling", "pages (tlb_single_page_flush_ceiling), e.g. 33"),
    ("flushall_shift", "-1..63, or 'table' / 'table-postfix' for the per-family table"),
    ("post_fix", "on | off (3.14 formula for flushall-shift)"),
    ("huge_walk", "on | off (has_large_page walk of v3.6-v3.13)"),
    ("early_return", "on | off"),
    ("read_tlb_gen", "always | when-needed | never"),
    ("concurrent_local", "on | off"),
    ("generations", "on | off (v4.14+ tlb_gen protocol; off = v3.x handler)"),
    ("coalesce_ipis", "on | off (v3.9+: IPI only to CPUs whose call queue was empty)"),
    (
        "lazy_ipis",
        "send | skip (send: v3.x-v4.18, lazy CPUs get flush IPIs and leave the mm; \
         skip: v4.19+, only when page tables were freed)",
    ),
    ("mmap_lock", "on | off (faults and mmap/munmap/madvise take mmap_lock; off is an ablation)"),
    ("pti", "on | off (v4.15+ page-table isolation, where the machine profile says the CPU needs it)"),
    ("kernel_tlb", "on | off (kernel code and data use the TLB, per kernel/text.rs; off = free)"),
    ("free_before_flush", "on | off (UNSAFE: frees pages before the TLB flush; for the oracle)"),
];

fn modern(name: &str, early_return: bool, read_tlb_gen: ReadTlbGen) -> KernelConfig {
    KernelConfig {
        name: name.into(),
        flush: FlushKnobs {
            policy: RangePolicy::Ceiling(33),
            generations: true,
            early_return,
            read_tlb_gen,
            concurrent_local: true,
            coalesce_ipis: true,
            lazy_ipis: LazyIpis::Skip,
            mmap_lock: true,
            pti: true,
            kernel_tlb: true,
            free_before_flush: false,
        },
        shift_from_table: None,
    }
}

fn shift_era(name: &str, post_fix: bool, huge_walk: bool) -> KernelConfig {
    KernelConfig {
        name: name.into(),
        flush: FlushKnobs {
            policy: RangePolicy::FlushallShift { shift: 6, post_fix, huge_walk },
            generations: false,
            early_return: false,
            read_tlb_gen: ReadTlbGen::Never,
            concurrent_local: false,
            coalesce_ipis: true,
            lazy_ipis: LazyIpis::Send,
            mmap_lock: true,
            pti: false,
            kernel_tlb: true,
            free_before_flush: false,
        },
        shift_from_table: Some(post_fix),
    }
}

impl KernelConfig {
    pub fn preset(name: &str) -> Result<KernelConfig, String> {
        Ok(match name {
            "3.4" => KernelConfig {
                name: name.into(),
                flush: FlushKnobs {
                    policy: RangePolicy::AlwaysFull,
                    generations: false,
                    early_return: false,
                    read_tlb_gen: ReadTlbGen::Never,
                    concurrent_local: false,
                    coalesce_ipis: false,
                    lazy_ipis: LazyIpis::Send,
                    mmap_lock: true,
                    pti: false,
                    kernel_tlb: true,
                    free_before_flush: false,
                },
                shift_from_table: None,
            },
            "3.13" => shift_era(name, false, true),
            "3.13-altershift" => shift_era(name, true, true),
            "3.13-nowalk" => shift_era(name, true, false),
            "3.17" => KernelConfig {
                flush: FlushKnobs {
                    generations: false,
                    concurrent_local: false,
                    pti: false,
                    lazy_ipis: LazyIpis::Send,
                    ..modern(name, false, ReadTlbGen::Never).flush
                },
                ..modern(name, false, ReadTlbGen::Never)
            },
            "5.18.1" => modern(name, false, ReadTlbGen::Always),
            "5.18.1+patch" => modern(name, true, ReadTlbGen::WhenNeeded),
            "5.18.1-early-return-touch" => modern(name, true, ReadTlbGen::Always),
            "5.18.1-no-tlb-gen" => modern(name, true, ReadTlbGen::Never),
            _ => {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
                return Err(format!("unknown kernel preset `{name}`; presets: {}", names.join(", ")));
            }
        })
    }

    /// Sets one knob from `KEY=VALUE` text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let allowed = || KNOBS.iter().find(|k| k.0 == key).map_or("", |k| k.1);
        let bad = || format!("knob `{key}`: `{value}` is not allowed; allowed: {}", allowed());
        let on_off = || match value {
            "on" | "true" | "1" => Ok(true),
            "off" | "false" | "0" => Ok(false),
            _ => Err(bad()),
        };
        let f = &mut self.flush;
        match key {
            "range_policy" => {
                f.policy = match value {
                    "always-full" => RangePolicy::AlwaysFull,
                    "ceiling" => RangePolicy::Ceiling(33),
                    "flushall-shift" => {
                        self.shift_from_table.get_or_insert(true);
                        RangePolicy::FlushallShift { shift: 6, post_fix: true, huge_walk: false }
                    }
                    _ => return Err(bad()),
                }
            }
            "ceiling" => f.policy = RangePolicy::Ceiling(value.parse().map_err(|_| bad())?),
            "flushall_shift" => {
                let (post_fix, huge_walk) = match f.policy {
                    RangePolicy::FlushallShift { post_fix, huge_walk, .. } => (post_fix, huge_walk),
                    _ => (true, false),
                };
                match value {
                    "table" | "table-postfix" => {
                        self.shift_from_table = Some(value == "table-postfix");
                        f.policy = RangePolicy::FlushallShift {
                            shift: 6,
                            post_fix: value == "table-postfix",
                            huge_walk,
                        };
                    }
                    _ => {
                        let shift: i8 = value.parse().map_err(|_| bad())?;
                        if !(-1..=63).contains(&shift) {
                            return Err(bad());
                        }
                        self.shift_from_table = None;
                        f.policy = RangePolicy::FlushallShift { shift, post_fix, huge_walk };
                    }
                }
            }
            "post_fix" | "huge_walk" => {
                let v = on_off()?;
                match &mut f.policy {
                    RangePolicy::FlushallShift { post_fix, huge_walk, .. } => {
                        if key == "post_fix" {
                            *post_fix = v;
                            if let Some(t) = &mut self.shift_from_table {
                                *t = v;
                            }
                        } else {
                            *huge_walk = v;
                        }
                    }
                    _ => return Err(format!("knob `{key}` applies only with range_policy=flushall-shift")),
                }
            }
            "early_return" => f.early_return = on_off()?,
            "read_tlb_gen" => {
                f.read_tlb_gen = match value {
                    "always" => ReadTlbGen::Always,
                    "when-needed" => ReadTlbGen::WhenNeeded,
                    "never" => ReadTlbGen::Never,
                    _ => return Err(bad()),
                }
            }
            "concurrent_local" => f.concurrent_local = on_off()?,
            "generations" => f.generations = on_off()?,
            "coalesce_ipis" => f.coalesce_ipis = on_off()?,
            "lazy_ipis" => {
                f.lazy_ipis = match value {
                    "send" => LazyIpis::Send,
                    "skip" => LazyIpis::Skip,
                    _ => return Err(bad()),
                }
            }
            "mmap_lock" => f.mmap_lock = on_off()?,
            "pti" => f.pti = on_off()?,
            "kernel_tlb" => f.kernel_tlb = on_off()?,
            "free_before_flush" => f.free_before_flush = on_off()?,
            _ => {
                let names: Vec<&str> = KNOBS.iter().map(|k| k.0).collect();
                return Err(format!("unknown knob `{key}`; knobs: {}", names.join(", ")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_builds_and_seed_002_columns_differ_only_in_their_knobs() {
        for (name, _) in PRESETS {
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
            crate::kernel::Kernel::boot(&p, KernelConfig::preset(name).unwrap()).effective_knobs().policy
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
        for (name, _) in PRESETS {
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
}
