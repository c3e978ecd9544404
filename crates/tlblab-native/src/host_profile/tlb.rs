//! The host's TLB structures as the profile holds them: from CPUID where it describes them, from
//! the pointer chase's knees where it does not (an Intel guest whose leaf 0x18 reads as zeros).

use tlblab_model::hw::tlb::{PageSize, Serves};
use tlblab_model::profile::{Confidence, Sharing, Sourced, TlbStructure};

use super::estimate;
use crate::cpuid;

/// The largest power of two not above `x` (x >= 1).
fn pow2_floor(x: u32) -> u32 {
    1 << (31 - x.max(1).leading_zeros())
}

/// CPUID rows as profile structures: rows of one level and kind with the same entry count are
/// one physical array serving several page sizes (AMD reports 4K and 2M separately for the same
/// structure); associativities the model cannot hold (sets must be a power of two) are widened
/// to the nearest representable one at the same capacity.
pub fn structures_from_cpuid(g: &cpuid::TlbGeometry, tag: &str, l2_hit: &Sourced) -> Vec<TlbStructure> {
    let mut out: Vec<(TlbStructure, Vec<String>)> = Vec::new();
    for e in &g.entries {
        let serves = match e.serves {
            cpuid::Serves::Instruction => Serves::Instruction,
            cpuid::Serves::Data => Serves::Data,
            cpuid::Serves::Unified => Serves::Unified,
            cpuid::Serves::Load => Serves::Load,
            cpuid::Serves::Store => Serves::Store,
        };
        let sizes: Vec<PageSize> = e
            .page_sizes
            .iter()
            .filter_map(|s| match *s {
                "4k" => Some(PageSize::Size4K),
                "2m" => Some(PageSize::Size2M),
                "1g" => Some(PageSize::Size1G),
                _ => None, // 4M pages do not exist in 64-bit mode
            })
            .collect();
        if sizes.is_empty() {
            continue;
        }
        if let Some((s, srcs)) =
            out.iter_mut().find(|(s, _)| s.level == e.level && s.serves == serves && s.entries == e.entries)
        {
            for z in sizes {
                if !s.page_sizes.contains(&z) {
                    s.page_sizes.push(z);
                }
            }
            srcs.push(format!("{} ({}-way)", e.source, e.ways));
            continue;
        }
        let sets = e.entries / e.ways.max(1);
        let (ways, widened) = if sets.is_power_of_two() && e.entries % e.ways.max(1) == 0 {
            (e.ways, None)
        } else {
            let s = pow2_floor(sets);
            (e.entries / s, Some(e.ways))
        };
        let mut srcs = vec![format!("{} ({}-way)", e.source, e.ways)];
        if let Some(w) = widened {
            srcs.push(format!(
                "{w}-way over {} entries gives {sets} sets, not a power of two: modelled as {} sets x {ways} ways \
                 (same capacity)",
                e.entries,
                e.entries / ways
            ));
        }
        let kind = match serves {
            Serves::Instruction => "ITLB",
            Serves::Unified if e.level == 2 => "STLB",
            Serves::Load => "DTLB load",
            Serves::Store => "DTLB store",
            _ => "DTLB",
        };
        let hit_cycles = if e.level == 1 {
            estimate(0.0, "level 1: lookup hidden in the load-to-use latency (profile.rs convention)")
        } else if serves == Serves::Instruction {
            Sourced {
                value: l2_hit.value,
                source: format!(
                    "assumed equal to the data side (the probe chases loads only): {}",
                    l2_hit.source
                ),
                confidence: Confidence::Estimate,
            }
        } else {
            l2_hit.clone()
        };
        out.push((
            TlbStructure {
                name: format!("L{} {kind}", e.level),
                level: e.level,
                serves,
                page_sizes: sizes,
                entries: e.entries,
                ways,
                sharing: Sharing::PerCore,
                source: String::new(),
                confidence: Confidence::Measured,
                hit_cycles,
            },
            srcs,
        ));
    }
    // Names must tell arrays apart: add the page sizes where two share a name.
    let names: Vec<String> = out.iter().map(|(s, _)| s.name.clone()).collect();
    out.into_iter()
        .map(|(mut s, srcs)| {
            if names.iter().filter(|n| **n == s.name).count() > 1 {
                let z: Vec<&str> = s.page_sizes.iter().map(|p| p.name()).collect();
                s.name = format!("{} {}", s.name, z.join("/"));
            }
            s.source = format!("{tag}: {}", srcs.join("; "));
            s
        })
        .collect()
}

/// Way counts a TLB built from a measured size is given, most common first: second-level TLBs
/// are 8-way (Haswell, Broadwell), 12-way (Skylake's 1536, Zen 4's 3072 as modelled) or 16-way
/// (Ice Lake, Zen 2 and 3), first-level ones 4- or 6-way.
pub const COMMON_WAYS: [u32; 6] = [8, 12, 16, 4, 6, 24];

/// A set-associative split of a TLB size measured by the chase (no penalty up to `entries`
/// pages, a penalty from `next`): the first of [`COMMON_WAYS`] that gives a power-of-two set
/// count at exactly `entries`; else the smallest such capacity above `entries` and below `next`;
/// else the largest below `entries`. Returns (entries, ways, how it was read).
pub fn split_measured(entries: u32, next: Option<u32>) -> (u32, u32, String) {
    let exact = COMMON_WAYS.iter().find(|&&w| entries % w == 0 && (entries / w).is_power_of_two());
    if let Some(&w) = exact {
        return (entries, w, format!("{} sets x {w} ways (the associativity is assumed)", entries / w));
    }
    // Every capacity sets x ways with a power-of-two set count, for the common way counts.
    let caps = |pick: &dyn Fn(u32) -> bool| {
        COMMON_WAYS
            .iter()
            .flat_map(|&w| (0..20).map(move |k| (w << k, w)))
            .filter(|&(c, _)| pick(c))
            .collect::<Vec<(u32, u32)>>()
    };
    let above = caps(&|c| c > entries && next.is_none_or(|n| c < n)).into_iter().min_by_key(|&(c, _)| c);
    let (cap, w) = above
        .or_else(|| caps(&|c| c <= entries).into_iter().max_by_key(|&(c, _)| c))
        .unwrap_or((entries.max(1), entries.max(1)));
    (
        cap,
        w,
        format!(
            "{entries} is no power-of-two number of sets of {COMMON_WAYS:?} ways: modelled as {} sets x {w} ways = \
             {cap} entries (the associativity is assumed)",
            cap / w
        ),
    )
}

/// The data side from the pointer chase when CPUID says nothing (e.g. an Intel guest whose
/// leaf 0x18 reads as zeros): an L1 DTLB and an L2 of the measured reaches. A first level up to
/// 128 entries is taken as fully associative (as Zen's 64-72); a larger one, and the second
/// level always, split by [`split_measured`].
pub fn structures_from_reach(
    r: &crate::probe::chase::Reach,
    tag: &str,
    l2_hit: &Sourced,
) -> Vec<TlbStructure> {
    let mut v = Vec::new();
    let reach = |p: usize, next: Option<usize>| match next {
        Some(n) => format!("no penalty up to {p} pages, a penalty from {n}"),
        None => format!("no penalty up to {p} pages"),
    };
    let (l1, l1_ways, l1_how) = match r.l1_pages.or(r.l2_pages) {
        Some(p) if p <= 128 => (p.max(1) as u32, p.max(1) as u32, "fully associative assumed".to_string()),
        Some(p) => split_measured(p as u32, r.l1_next.map(|n| n as u32)),
        None => {
            (64, 4, "no reach visible: 64 entries 4-way assumed (Intel's L1 DTLB since Nehalem)".to_string())
        }
    };
    let level1 = |name: &str, serves: Serves, source: String| TlbStructure {
        name: name.into(),
        level: 1,
        serves,
        page_sizes: vec![PageSize::Size4K],
        entries: l1,
        ways: l1_ways,
        sharing: Sharing::PerCore,
        source,
        confidence: Confidence::Estimate,
        hit_cycles: estimate(
            0.0,
            "level 1: lookup hidden in the load-to-use latency (profile.rs convention)",
        ),
    };
    v.push(level1(
        "L1 DTLB",
        Serves::Data,
        format!(
            "{tag}: CPUID gave no TLB geometry; entries = the pointer-chase L1 reach ({}); {l1_how}",
            r.l1_pages.map_or_else(|| format!("not visible: {}", r.reading), |p| reach(p, r.l1_next))
        ),
    ));
    v.push(level1(
        "L1 ITLB",
        Serves::Instruction,
        format!(
            "{tag}: not measurable by a data pointer chase; assumed the size of the L1 DTLB reach ({l1_how})"
        ),
    ));
    if let Some(p) = r.l2_pages {
        let (entries, ways, how) = split_measured(p as u32, r.l2_next.map(|n| n as u32));
        v.push(TlbStructure {
            name: "L2 STLB".into(),
            level: 2,
            serves: Serves::Unified,
            page_sizes: vec![PageSize::Size4K, PageSize::Size2M],
            entries,
            ways,
            sharing: Sharing::PerCore,
            source: format!(
                "{tag}: CPUID gave no TLB geometry; entries = the pointer-chase L2 reach ({}), measured; {how}; \
                 unified (4K+2M) assumed",
                reach(p, r.l2_next)
            ),
            confidence: Confidence::Measured,
            hit_cycles: l2_hit.clone(),
        });
    }
    v
}

/// The profile whose TLBs a host borrows when neither CPUID nor the chase describes them.
pub const ASSUMED_TLBS_FROM: &str = "skylake-sp-2s";

/// The TLBs when neither CPUID nor the chase describes them (no THP baseline, or no kink): the
/// built-in Skylake-SP profile's (Intel's client and server cores since Skylake share them),
/// every row labelled as assumed; a second level hits in `l2_hit` (the host's, when measured).
pub fn structures_assumed(tag: &str, why: &str, l2_hit: &Sourced) -> Vec<TlbStructure> {
    let from = super::builtin_profile(ASSUMED_TLBS_FROM);
    from.tlb
        .structures
        .into_iter()
        .map(|mut s| {
            s.source = format!(
                "{tag}: fallback: {why}; {} entries {}-way assumed, profiles/{ASSUMED_TLBS_FROM}.toml's: {}",
                s.entries, s.ways, s.source
            );
            s.confidence = Confidence::Estimate;
            if s.level > 1 {
                s.hit_cycles = l2_hit.clone();
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_size_splits_into_power_of_two_sets_of_common_ways() {
        // The Intel guest's chase: no penalty up to 12,288 pages, a penalty from 16,384.
        let (e, w, how) = split_measured(12_288, Some(16_384));
        assert_eq!((e, w), (12_288, 12), "{how}");
        assert!(how.starts_with("1024 sets x 12 ways"), "{how}");
        for (entries, ways) in [(1024, 8), (1536, 12), (2048, 8), (3072, 12), (64, 8), (96, 12), (48, 12)] {
            let (e, w, how) = split_measured(entries, None);
            assert_eq!((e, w), (entries, ways), "{how}");
            assert!((e / w).is_power_of_two());
        }
        // No exact split: the smallest representable capacity above, below the next point.
        let (e, w, how) = split_measured(1000, Some(1536));
        assert_eq!((e, w), (1024, 8), "{how}");
        assert!(how.contains("1000 is no power-of-two"), "{how}");
        // Nothing between the point and the next: the largest below.
        let (e, w, _) = split_measured(1000, Some(1001));
        assert!(e <= 1000 && (e / w).is_power_of_two() && COMMON_WAYS.contains(&w), "{e} {w}");
    }

    #[test]
    fn zen4_cpuid_rows_become_representable_structures() {
        let text =
            std::fs::read_to_string(format!("{}/tests/data/cpuid-zen4-kvm.txt", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let g = cpuid::decode_tlbs(&cpuid::CpuidDump::parse(&text).unwrap());
        let hit = estimate(8.0, "test");
        let s = structures_from_cpuid(&g, "test", &hit);
        let l1d = s.iter().find(|s| s.name == "L1 DTLB").unwrap();
        assert_eq!((l1d.entries, l1d.ways), (72, 72));
        assert_eq!(l1d.page_sizes, [PageSize::Size4K, PageSize::Size2M]);
        // 3072 entries 8-way is 384 sets: widened to 256 sets x 12 ways.
        let l2d = s.iter().find(|s| s.name == "L2 DTLB").unwrap();
        assert_eq!((l2d.entries, l2d.ways), (3072, 12));
        assert!(l2d.source.contains("not a power of two"), "{}", l2d.source);
        assert_eq!(l2d.hit_cycles.value, 8.0);
        assert!(s.iter().any(|s| s.name == "L2 ITLB" && s.hit_cycles.confidence == Confidence::Estimate));
    }
}
