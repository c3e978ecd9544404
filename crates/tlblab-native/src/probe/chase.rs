//! Pointer chasing: the TLB-reach sweep (one cache line per page, pages in a random cyclic
//! order, 4 KiB pages vs transparent huge pages over the same lines) and the cache/DRAM latency
//! ladder (every line of a working set, random order, on huge pages so the TLB stays quiet).
//!
//! The 4K-minus-THP difference at N pages is the translation penalty: zero while N fits the L1
//! DTLB, an L2-TLB hit while it fits the L2 TLB, a page walk beyond. Past 72 x 512 pages the
//! huge-page run itself leaves its L1 DTLB, so the difference there understates by one L2 hit.

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::stats::{BlockEstimate, Summary};
use crate::sys::{self, Advice, Mapping, HUGE_PAGE, PAGE};

/// xorshift64*: the probe's own small, seeded generator for chain orders.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// Links the byte offsets `slots` of `m` into one random cycle; returns the start address.
fn build_cycle(m: &Mapping, slots: &mut [usize], rng: &mut Rng) -> *const u64 {
    rng.shuffle(slots);
    let base = m.as_ptr() as usize;
    // SAFETY: only this thread touches the mapping while the chain is built and chased.
    let words = unsafe { m.words_mut() };
    for i in 0..slots.len() {
        let next = slots[(i + 1) % slots.len()];
        words[slots[i] / 8] = (base + next) as u64;
    }
    (base + slots[0]) as *const u64
}

/// ns per dependent load over the cycle from `start`: one warm-up pass, then `steps` loads.
fn time_chase(start: *const u64, warm: u64, steps: u64) -> f64 {
    std::hint::black_box(sys::chase(start, warm));
    let t = Instant::now();
    std::hint::black_box(sys::chase(start, steps));
    t.elapsed().as_nanos() as f64 / steps as f64
}

/// Fraction of `m` backed by huge pages, from `/proc/self/smaps` (`AnonHugePages` of its VMA).
pub fn huge_page_share(m: &Mapping) -> Option<f64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let start = m.as_ptr() as usize;
    let mut in_vma = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    in_vma = a <= start && start < b;
                    continue;
                }
            }
        }
        if in_vma && line.starts_with("AnonHugePages:") {
            let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            return Some((kb * 1024.0 / m.len() as f64).min(1.0));
        }
    }
    None
}

/// A region of `bytes` (huge-page aligned), hinted and fully touched.
fn region(bytes: usize, advice: Advice) -> std::io::Result<Mapping> {
    let m = Mapping::aligned_anon(bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE, HUGE_PAGE)?;
    m.madvise(0, m.len(), advice)?;
    for off in (0..m.len()).step_by(PAGE) {
        m.write_byte(off, 1);
    }
    Ok(m)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachPoint {
    pub pages: usize,
    pub ns_4k: Summary,
    /// `None` when THP is unavailable.
    pub ns_thp: Option<Summary>,
    /// 4K minus THP within each block, summarised over blocks (`None` without THP).
    pub penalty_ns: Option<Summary>,
}

impl ReachPoint {
    /// Translation penalty in ns per access: the median over blocks of 4K minus THP.
    pub fn penalty(&self) -> Option<f64> {
        self.penalty_ns.map(|p| p.median)
    }
}

/// One block: every size chased once on 4 KiB pages and once on huge pages, back to back (the
/// order alternating), so each block's 4K-minus-THP difference is taken inside a few
/// milliseconds. Vectors are indexed like [`ReachSweep::points`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachBlock {
    pub ns_4k: Vec<f64>,
    pub ns_thp: Vec<Option<f64>>,
}

impl ReachBlock {
    fn penalty(&self, i: usize) -> Option<f64> {
        self.ns_thp[i].map(|t| self.ns_4k[i] - t)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachSweep {
    pub points: Vec<ReachPoint>,
    /// The raw measurement, one entry per block.
    pub blocks: Vec<ReachBlock>,
    /// Share of the THP region that really was backed by huge pages.
    pub thp_backed: Option<f64>,
    pub notes: Vec<String>,
}

impl ReachSweep {
    /// The per-size summaries over `blocks` (sizes in `pages`).
    pub fn from_blocks(pages: &[usize], blocks: Vec<ReachBlock>, thp_backed: Option<f64>) -> ReachSweep {
        let points = pages
            .iter()
            .enumerate()
            .map(|(i, &pages)| {
                let thp: Option<Vec<f64>> = blocks.iter().map(|b| b.ns_thp[i]).collect();
                let pen: Option<Vec<f64>> = blocks.iter().map(|b| b.penalty(i)).collect();
                ReachPoint {
                    pages,
                    ns_4k: Summary::of(&blocks.iter().map(|b| b.ns_4k[i]).collect::<Vec<_>>()),
                    ns_thp: thp.map(|v| Summary::of(&v)),
                    penalty_ns: pen.map(|v| Summary::of(&v)),
                }
            })
            .collect();
        ReachSweep { points, blocks, thp_backed, notes: vec![] }
    }
}

/// The page counts of the sweep: 16, 24, 32, 48, ... up to `max_pages` (powers of two and
/// the midpoints 1.5 x 2^k between them).
pub fn sweep_sizes(max_pages: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut p = 16;
    while p <= max_pages {
        v.push(p);
        if p * 3 / 2 <= max_pages {
            v.push(p * 3 / 2);
        }
        p *= 2;
    }
    v
}

/// One timing of a chase over the first `pages` pages of `m` (one line per page, line offset
/// varying with the page so cache sets do not alias), in a fresh random order.
fn reach_point(m: &Mapping, pages: usize, min_steps: u64, rng: &mut Rng) -> f64 {
    let mut slots: Vec<usize> = (0..pages).map(|p| p * PAGE + (p % 64) * 64).collect();
    let steps = (min_steps.div_ceil(pages as u64)) * pages as u64;
    let start = build_cycle(m, &mut slots, rng);
    time_chase(start, pages as u64, steps)
}

/// The TLB-reach sweep up to `max_pages`, in `runs` blocks.
pub fn reach_sweep(
    max_pages: usize,
    runs: usize,
    min_steps: u64,
    thp: bool,
    seed: u64,
) -> std::io::Result<ReachSweep> {
    let sizes = sweep_sizes(max_pages);
    let mut notes = Vec::new();
    let mut rng = Rng::new(seed);
    let m4k = region(max_pages * PAGE, Advice::NoHugePage)?;
    let (mthp, thp_backed) = if thp {
        let m = region(max_pages * PAGE, Advice::HugePage)?;
        let share = huge_page_share(&m);
        if share.is_some_and(|s| s < 0.9) {
            notes.push(format!(
                "only {:.0}% of the THP region got huge pages (fragmented memory?): the penalty is understated",
                100.0 * share.unwrap()
            ));
        }
        (Some(m), share)
    } else {
        notes.push("transparent huge pages unavailable: no THP baseline, so no translation penalty".into());
        (None, None)
    };
    let blocks = (0..runs)
        .map(|run| {
            let mut b = ReachBlock { ns_4k: vec![0.0; sizes.len()], ns_thp: vec![None; sizes.len()] };
            for (i, &n) in sizes.iter().enumerate() {
                // Which page size goes first alternates by size and block.
                if (i + run) % 2 == 0 {
                    b.ns_4k[i] = reach_point(&m4k, n, min_steps, &mut rng);
                    b.ns_thp[i] = mthp.as_ref().map(|m| reach_point(m, n, min_steps, &mut rng));
                } else {
                    b.ns_thp[i] = mthp.as_ref().map(|m| reach_point(m, n, min_steps, &mut rng));
                    b.ns_4k[i] = reach_point(&m4k, n, min_steps, &mut rng);
                }
            }
            b
        })
        .collect();
    let mut s = ReachSweep::from_blocks(&sizes, blocks, thp_backed);
    s.notes = notes;
    Ok(s)
}

/// What the sweep says about the data-side TLBs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reach {
    /// Largest page count with no penalty where an L1-DTLB kink is visible (an L1 miss that hits
    /// the L2 TLB may cost too little to see), and the next point measured.
    pub l1_pages: Option<usize>,
    pub l1_next: Option<usize>,
    /// Largest page count with at most an L2-TLB hit (the STLB / L2 DTLB reach).
    pub l2_pages: Option<usize>,
    pub l2_next: Option<usize>,
    /// Penalty of an L2-TLB hit (ns per access), between the two reaches.
    pub l2_hit_ns: Option<f64>,
    /// Penalty of a page walk whose page-table entries hit in the caches, 4x-16x beyond the L2
    /// reach (L2 lookup included: it precedes the walk).
    pub miss_ns: Option<f64>,
    /// Penalty at the largest size measured.
    pub max_ns: f64,
    /// Per block, over the same sizes as `l2_hit_ns`: the L2-TLB hit penalty.
    pub l2_hit: Option<BlockEstimate>,
    /// Per block, the walk plateau minus the L2-TLB hit (`miss_ns - l2_hit_ns`): one page walk
    /// whose page-table entries hit in the caches.
    pub walk: Option<BlockEstimate>,
    /// How the kinks were matched to TLB levels.
    pub reading: String,
}

/// The first index from which `pred` holds for this point and the next (one outlier does not
/// make a kink).
fn first_sustained(p: &[f64], from: usize, pred: impl Fn(f64) -> bool) -> Option<usize> {
    (from..p.len()).find(|&i| pred(p[i]) && (i + 1 == p.len() || pred(p[i + 1])))
}

/// The plateaus of one penalty curve, over fixed sets of sizes: (L2-TLB hit, walk plateau),
/// both relative to the curve's own no-penalty base (median at <= 32 pages).
fn plateaus(
    pen: &[f64],
    n: &[usize],
    hit_idx: &[usize],
    walk_idx: &[usize],
    clamp: bool,
) -> (Option<f64>, Option<f64>) {
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| Summary::of(&v).median);
    let small: Vec<f64> = pen.iter().zip(n).filter(|(_, &n)| n <= 32).map(|(p, _)| *p).collect();
    let base = med(small).unwrap_or(pen[0]);
    let hit =
        med(hit_idx.iter().map(|&i| if clamp { (pen[i] - base).max(0.0) } else { pen[i] - base }).collect());
    let walk = med(walk_idx.iter().map(|&i| pen[i] - base).collect());
    (hit, walk)
}

/// Finds the kinks of a sweep; `cpuid_l2` is the L2 DTLB size CPUID reports, if any, used to
/// tell an L1 kink from an L2 one when only one is visible. `None` without a THP baseline.
///
/// The kinks come from the block-median penalty curve; the L2-hit and walk figures are then
/// taken over the same sizes in every block separately ([`Reach::l2_hit`], [`Reach::walk`]).
pub fn analyse(sweep: &ReachSweep, cpuid_l2: Option<usize>) -> Option<Reach> {
    let pts = &sweep.points;
    let pen: Vec<f64> = pts.iter().map(|p| p.penalty()).collect::<Option<_>>()?;
    let n: Vec<usize> = pts.iter().map(|p| p.pages).collect();
    let small: Vec<f64> = pen.iter().zip(&n).filter(|(_, &n)| n <= 32).map(|(p, _)| *p).collect();
    let base = if small.is_empty() { pen[0] } else { Summary::of(&small).median };
    let top = *pen.last()?;
    // The first kink: the first sustained rise by more than 1 ns (chase noise on a quiet core
    // stays well below that).
    let k1 = first_sustained(&pen, 0, |p| p > base + 1.0)?;
    let first = if k1 == 0 { 0 } else { n[k1 - 1] };
    let walk_idx = |reach: usize| -> Vec<usize> {
        (0..n.len()).filter(|&i| n[i] >= 4 * reach && n[i] <= 16 * reach).collect()
    };
    let (l1_pages, l1_next, l2_pages, l2_next, hit_idx, walk_set, clamp, reading);
    if cpuid_l2.is_some_and(|e| first >= e / 2) {
        // The first visible rise is where CPUID's L2 TLB runs out: L1 misses that hit the L2
        // TLB cost less than the 1 ns threshold here.
        (l1_pages, l1_next, l2_pages, l2_next) = (None, None, Some(first), n.get(k1).copied());
        hit_idx = (0..n.len()).filter(|&i| n[i] >= 128 && n[i] <= first).collect::<Vec<_>>();
        // The walk plateau is anchored on CPUID's size, not on where this sweep's rise fell,
        // so every probe of the host averages over the same sizes.
        walk_set = walk_idx(cpuid_l2.unwrap());
        clamp = true;
        reading = format!(
            "one rise, at {first}..{} pages, where CPUID's {} -entry L2 TLB runs out: an L1 DTLB miss that hits \
             the L2 TLB costs under 1 ns on this core, so the L1 reach is not visible",
            n.get(k1).map_or("-".into(), |x| x.to_string()),
            cpuid_l2.unwrap()
        );
    } else {
        // Otherwise the second kink: the first sustained point past half-way from base to top.
        let half = base + 0.5 * (top - base);
        let k2 = first_sustained(&pen, k1, |p| p > half);
        (l1_pages, l1_next) = (Some(first), n.get(k1).copied());
        l2_pages = k2.map(|k| n[k.max(1) - 1]);
        l2_next = k2.and_then(|k| n.get(k).copied());
        // L2-hit plateau: points at least twice the L1 reach and inside the L2 reach.
        // Where CPUID gives the L2 size, the plateaus are anchored on it rather than on where
        // this sweep's second rise fell, so every probe of the host uses the same sizes.
        let l2_end = cpuid_l2.or(l2_pages).unwrap_or(usize::MAX);
        hit_idx =
            (k1..k2.unwrap_or(pen.len())).filter(|&i| n[i] >= 2 * first.max(1) && n[i] <= l2_end).collect();
        walk_set = cpuid_l2.or(l2_pages).map(walk_idx).unwrap_or_default();
        clamp = false;
        reading = "two rises: the first past the L1 DTLB, the second (half-way to the largest penalty) past the L2 TLB"
            .into();
    }
    let (l2_hit_ns, miss_ns) = plateaus(&pen, &n, &hit_idx, &walk_set, clamp);
    // Per block: the same sizes, the block's own base.
    let per_block: Vec<(Option<f64>, Option<f64>)> = sweep
        .blocks
        .iter()
        .filter_map(|b| {
            let p: Option<Vec<f64>> = (0..n.len()).map(|i| b.penalty(i)).collect();
            p.map(|p| plateaus(&p, &n, &hit_idx, &walk_set, clamp))
        })
        .collect();
    let hits: Vec<f64> = per_block.iter().map(|x| x.0.unwrap_or(f64::NAN)).collect();
    let walks: Vec<f64> = per_block.iter().map(|x| x.0.zip(x.1).map_or(f64::NAN, |(h, m)| m - h)).collect();
    let sizes = |idx: &[usize]| match (idx.first(), idx.last()) {
        (Some(&a), Some(&b)) => format!("{}..={} pages", n[a], n[b]),
        _ => "no sizes".into(),
    };
    Some(Reach {
        l1_pages,
        l1_next,
        l2_pages,
        l2_next,
        l2_hit_ns,
        miss_ns,
        max_ns: top - base,
        l2_hit: l2_hit_ns.map(|_| {
            let mut e = BlockEstimate::positive(
                &hits,
                format!("per block: median 4K-minus-THP penalty over {} minus the block's base (<= 32 pages)", sizes(&hit_idx)),
            );
            // With one visible rise the plateau is by construction under the 1 ns the kink
            // search needs: a figure there is not resolved, whatever its scatter.
            if clamp && e.value < 1.0 {
                e.resolved = false;
                e.how += " (under the 1 ns a rise must reach to be told from chase noise)";
            }
            e
        }),
        walk: miss_ns.zip(l2_hit_ns).map(|_| {
            BlockEstimate::positive(
                &walks,
                format!(
                    "per block: median penalty over {} (4x-16x the L2 reach) minus the block's L2-hit plateau",
                    sizes(&walk_set)
                ),
            )
        }),
        reading,
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheLevel {
    /// `L1D`, `L2`, `LLC`, `DRAM`.
    pub name: String,
    pub working_set: usize,
    pub ns: Summary,
}

/// Cache sizes from sysfs (data/unified caches by level), in bytes.
pub fn cache_sizes() -> Vec<(u8, usize)> {
    let mut v = Vec::new();
    for i in 0..8 {
        let r = |f: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/{f}")).ok()
        };
        let (Some(level), Some(kind), Some(size)) = (r("level"), r("type"), r("size")) else { continue };
        if kind.trim() == "Instruction" {
            continue;
        }
        let s = size.trim();
        let bytes = if let Some(k) = s.strip_suffix('K') {
            k.parse::<usize>().ok().map(|k| k << 10)
        } else if let Some(m) = s.strip_suffix('M') {
            m.parse::<usize>().ok().map(|m| m << 20)
        } else {
            s.parse().ok()
        };
        if let (Ok(l), Some(b)) = (level.trim().parse(), bytes) {
            v.push((l, b));
        }
    }
    v.sort();
    v
}

/// Load-to-use latency at each level: a random cycle through every line of a working set of
/// half the level's size (a quarter for L1D; for the LLC 4x L2 or an eighth of the LLC, at most
/// half), and one of 4x the last level for DRAM.
pub fn cache_ladder(
    runs: usize,
    min_steps: u64,
    dram_bytes: usize,
    thp: bool,
    seed: u64,
) -> std::io::Result<(Vec<CacheLevel>, Vec<String>)> {
    let mut notes = Vec::new();
    let sizes = cache_sizes();
    let size_of = |l: u8, default: usize| sizes.iter().find(|s| s.0 == l).map_or(default, |s| s.1);
    if sizes.is_empty() {
        notes.push("no cache sizes in sysfs: assumed 32 KiB L1D, 1 MiB L2, 32 MiB LLC".into());
    }
    let llc = sizes.iter().map(|s| s.1).max().unwrap_or(32 << 20);
    let sets = [
        ("L1D", size_of(1, 32 << 10) / 4),
        ("L2", size_of(2, 1 << 20) / 2),
        // Well past L2 but far inside the LLC: on a shared LLC (other cores, other guests) a
        // set of half its size is partly evicted between laps and reads as a DRAM mix.
        ("LLC", (4 * size_of(2, 1 << 20)).max(llc / 8).min(llc / 2)),
        ("DRAM", dram_bytes.max(4 * llc)),
    ];
    if !thp {
        notes.push("no THP: the cache ladder runs on 4 KiB pages, so LLC/DRAM include TLB misses".into());
    }
    let advice = if thp { Advice::HugePage } else { Advice::NoHugePage };
    let m = region(sets[3].1, advice)?;
    let mut rng = Rng::new(seed);
    let mut slots: Vec<Vec<usize>> =
        sets.iter().map(|(_, ws)| (0..ws / 64).map(|l| l * 64).collect()).collect();
    let mut samples = vec![Vec::with_capacity(runs); sets.len()];
    // Blocks: every level once per block, so a slow phase of the host shows as spread in every
    // level rather than as a bias of one.
    for _ in 0..runs {
        for (i, slots) in slots.iter_mut().enumerate() {
            // A random cycle needs no full lap to be measured: cap the warm-up at the step count.
            let warm = (slots.len() as u64).min(min_steps);
            let start = build_cycle(&m, slots, &mut rng);
            samples[i].push(time_chase(start, warm, min_steps));
        }
    }
    let out = sets
        .iter()
        .zip(samples)
        .map(|(&(name, ws), v)| CacheLevel { name: name.into(), working_set: ws, ns: Summary::of(&v) })
        .collect();
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three blocks of the penalty curve `pen`, the second 0.2 ns slower everywhere (4K and THP
    /// alike, so its penalty is the same) and the third with every penalty 10% higher.
    fn sweep(pen: &[(usize, f64)]) -> ReachSweep {
        let pages: Vec<usize> = pen.iter().map(|p| p.0).collect();
        let block = |shift: f64, scale: f64| ReachBlock {
            ns_4k: pen.iter().map(|&(_, p)| 1.5 + shift + scale * p).collect(),
            ns_thp: pen.iter().map(|_| Some(1.5 + shift)).collect(),
        };
        ReachSweep::from_blocks(&pages, vec![block(0.0, 1.0), block(0.2, 1.0), block(0.0, 1.1)], Some(1.0))
    }

    #[test]
    fn sizes_interleave_midpoints() {
        assert_eq!(sweep_sizes(128), [16, 24, 32, 48, 64, 96, 128]);
        assert_eq!(*sweep_sizes(1 << 18).last().unwrap(), 1 << 18);
    }

    #[test]
    fn kinks_of_a_synthetic_zen4_like_sweep() {
        // 72-entry L1 DTLB (penalty 0 up to 64), 3072-entry L2 (3 ns up to 3072), walks 20 ns.
        let pts: Vec<(usize, f64)> = sweep_sizes(1 << 16)
            .into_iter()
            .map(|n| {
                (
                    n,
                    if n <= 72 {
                        0.1
                    } else if n <= 3072 {
                        3.0
                    } else {
                        20.0
                    },
                )
            })
            .collect();
        let r = analyse(&sweep(&pts), None).unwrap();
        assert_eq!((r.l1_pages, r.l1_next), (Some(64), Some(96)));
        assert_eq!((r.l2_pages, r.l2_next), (Some(3072), Some(4096)));
        assert!((r.l2_hit_ns.unwrap() - 2.9).abs() < 1e-9);
        assert!((r.miss_ns.unwrap() - 19.9).abs() < 1e-9);
        // Per block: walk = plateau minus hit: 17, 17 and 18.7 (the 10% block).
        let w = r.walk.as_ref().unwrap();
        assert!(w.resolved && (w.value - 17.0).abs() < 1e-9, "{w:?}");
        assert!((w.blocks.max - 1.1 * 17.0).abs() < 1e-9, "{w:?}");
        // One noisy point does not make a kink.
        let mut noisy = pts.clone();
        noisy[1].1 = 5.0;
        assert_eq!(analyse(&sweep(&noisy), None).unwrap().l1_pages, Some(64));
        // This host: no visible L1 kink, one rise where CPUID's 3072-entry L2 DTLB runs out.
        let flat: Vec<(usize, f64)> =
            sweep_sizes(1 << 16).into_iter().map(|n| (n, if n <= 2048 { 0.0 } else { 12.0 })).collect();
        let r = analyse(&sweep(&flat), Some(3072)).unwrap();
        assert_eq!((r.l1_pages, r.l2_pages, r.l2_next), (None, Some(2048), Some(3072)));
        assert_eq!(r.l2_hit_ns, Some(0.0));
        assert_eq!(r.miss_ns, Some(12.0));
        assert!(!r.l2_hit.as_ref().unwrap().resolved, "{:?}", r.l2_hit);
        assert!(r.walk.as_ref().unwrap().resolved);
    }

    #[test]
    fn a_real_chase_runs_and_orders_the_ladder() {
        let s = reach_sweep(64, 1, 10_000, true, 1).unwrap();
        assert_eq!(s.points.len(), sweep_sizes(64).len());
        assert!(s.points.iter().all(|p| p.ns_4k.median > 0.0));
        let (ladder, _) = cache_ladder(1, 20_000, 8 << 20, true, 1).unwrap();
        assert_eq!(ladder.len(), 4);
        // A DRAM-sized random chase is slower than an L1-resident one on any machine.
        assert!(ladder[3].ns.median > ladder[0].ns.median, "{ladder:?}");
    }
}
