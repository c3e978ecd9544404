//! Small set-associative caches that decide what a memory access costs on a machine without a
//! cache hierarchy worth the name (the MPC8xx: 4 KB I-cache + 4 KB D-cache, SDRAM behind them).
//!
//! Rules, from the MPC860 User's Manual ch. 8 "Instruction and Data Caches" ("860UM"; the 855T
//! has the same 4 KB / 16-byte-line / 2-way organisation, docs/references/machine-costs.md#mpc855t):
//! - Physically addressed and tagged; `ways`-way set associative; LRU within a set (860UM §8
//!   intro: "least-recently-used (LRU) replacement algorithm within each set").
//! - A miss picks an invalid way first, way 0 before way 1, else the LRU way (860UM §8.6.2).
//! - Load hit: one clock (860UM §8.6.1). Load miss: a 4-word burst, critical word first; the
//!   core waits for the critical word only (`miss_cycles`). A modified victim goes to the
//!   copyback buffer and is written after the fill: it occupies the bus, and the model charges
//!   that `writeback_cycles` to the access that evicted it (a scalar in-order core with one bus
//!   cannot start the next miss before it is out).
//! - Copy-back store hit: written, line marked modified. Copy-back store miss: the line is
//!   allocated and filled, and "cache operation is blocked until the cache block is written to
//!   the cache array" (860UM §8.6, feature list), so it costs the whole line (`fill_cycles`).
//! - Write-through store: memory is always written (`write_through_cycles`); a store miss does
//!   not allocate ("no-allocate store miss", 860UM §8.6.3.2).
//! - `dcbz` establishes a zeroed, modified line without reading memory (PowerPC architecture);
//!   in write-through mode the model also writes the zeroed line to memory (an assumption: the
//!   manual pages read here do not say what dcbz does to a write-through page).
//!
//! The I-cache is the same structure used for fetches only.

use std::fmt;

/// How stores are handled (per MMU page on the 8xx; Linux 2.4/2.6 set write-through as the
/// default unless `CONFIG_8xx_COPYBACK`: head_8xx.S sets `MD_WTDEF` in `MD_CTR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePolicy {
    CopyBack,
    WriteThrough,
}

impl WritePolicy {
    pub fn parse(s: &str) -> Option<WritePolicy> {
        match s {
            "copyback" => Some(WritePolicy::CopyBack),
            "write-through" => Some(WritePolicy::WriteThrough),
            _ => None,
        }
    }
}

/// Geometry and latencies of one cache, in core clocks.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSpec {
    pub name: String,
    pub size_bytes: u32,
    pub line_bytes: u32,
    pub ways: u32,
    /// An access that hits.
    pub hit_cycles: u32,
    /// A read miss until the critical word arrives (includes the hit-check clock).
    pub miss_cycles: u32,
    /// A whole-line fill (what a blocking copy-back store miss waits for).
    pub fill_cycles: u32,
    /// Writing one modified line back to memory.
    pub writeback_cycles: u32,
    /// One single-beat store to memory (write-through).
    pub write_through_cycles: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSpecError(pub String);

impl fmt::Display for CacheSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CacheSpecError {}

impl CacheSpec {
    pub fn sets(&self) -> u32 {
        self.size_bytes / (self.line_bytes * self.ways)
    }

    /// Sizes must be powers of two and the capacity a whole number of sets.
    pub fn validate(&self) -> Result<(), CacheSpecError> {
        let err = |m: String| Err(CacheSpecError(format!("cache {}: {m}", self.name)));
        if !self.line_bytes.is_power_of_two() || self.line_bytes < 4 {
            return err(format!("line_bytes = {} must be a power of two >= 4", self.line_bytes));
        }
        if self.ways == 0 || self.ways > 64 {
            return err(format!("ways = {} must be 1..=64", self.ways));
        }
        let way_bytes = self.line_bytes * self.ways;
        if self.size_bytes == 0
            || !self.size_bytes.is_multiple_of(way_bytes)
            || !self.sets().is_power_of_two()
        {
            return err(format!(
                "size_bytes = {} must be a power-of-two number of sets of {} ways x {} bytes",
                self.size_bytes, self.ways, self.line_bytes
            ));
        }
        if self.hit_cycles > self.miss_cycles || self.miss_cycles > self.fill_cycles {
            return err(format!(
                "latencies must satisfy hit_cycles ({}) <= miss_cycles ({}) <= fill_cycles ({})",
                self.hit_cycles, self.miss_cycles, self.fill_cycles
            ));
        }
        Ok(())
    }
}

/// What one access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheAccess {
    pub hit: bool,
    pub cycles: u32,
    /// A modified line was evicted (and written back).
    pub writeback: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
    pub fills: u64,
    pub writebacks: u64,
    pub write_throughs: u64,
    pub zeroed_lines: u64,
    pub cycles: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Line {
    tag: u64,
    valid: bool,
    dirty: bool,
    /// Last-use stamp for LRU.
    used: u64,
}

/// One cache: its lines, LRU state and counters.
#[derive(Debug, Clone)]
pub struct Cache {
    spec: CacheSpec,
    line_shift: u32,
    set_mask: u64,
    lines: Vec<Line>,
    clock: u64,
    stats: CacheStats,
}

impl Cache {
    pub fn new(spec: CacheSpec) -> Result<Cache, CacheSpecError> {
        spec.validate()?;
        let n = (spec.sets() * spec.ways) as usize;
        Ok(Cache {
            line_shift: spec.line_bytes.trailing_zeros(),
            set_mask: spec.sets() as u64 - 1,
            lines: vec![Line::default(); n],
            clock: 0,
            stats: CacheStats::default(),
            spec,
        })
    }

    pub fn spec(&self) -> &CacheSpec {
        &self.spec
    }

    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// Drop every line without writing anything back (`IDC_INVALL`).
    pub fn invalidate_all(&mut self) {
        self.lines.fill(Line::default());
    }

    /// Whether the line holding `addr` is present (no LRU update, no counting).
    pub fn contains(&self, addr: u64) -> bool {
        let (set, tag) = self.index(addr);
        self.set(set).iter().any(|l| l.valid && l.tag == tag)
    }

    /// Whether the line holding `addr` is present and modified.
    pub fn is_dirty(&self, addr: u64) -> bool {
        let (set, tag) = self.index(addr);
        self.set(set).iter().any(|l| l.valid && l.tag == tag && l.dirty)
    }

    /// An instruction fetch or a load.
    pub fn read(&mut self, addr: u64) -> CacheAccess {
        self.stats.reads += 1;
        let r = match self.find(addr) {
            Some(i) => {
                self.touch(i);
                CacheAccess { hit: true, cycles: self.spec.hit_cycles, writeback: false }
            }
            None => {
                self.stats.read_misses += 1;
                let wb = self.allocate(addr, false);
                self.stats.fills += 1;
                let cycles = self.spec.miss_cycles + if wb { self.spec.writeback_cycles } else { 0 };
                CacheAccess { hit: false, cycles, writeback: wb }
            }
        };
        self.stats.cycles += r.cycles as u64;
        r
    }

    /// A store under `policy`.
    pub fn write(&mut self, addr: u64, policy: WritePolicy) -> CacheAccess {
        self.stats.writes += 1;
        let found = self.find(addr);
        let r = match (policy, found) {
            (WritePolicy::CopyBack, Some(i)) => {
                self.touch(i);
                self.lines[i].dirty = true;
                CacheAccess { hit: true, cycles: self.spec.hit_cycles, writeback: false }
            }
            (WritePolicy::CopyBack, None) => {
                self.stats.write_misses += 1;
                let wb = self.allocate(addr, true);
                self.stats.fills += 1;
                let cycles = self.spec.fill_cycles + if wb { self.spec.writeback_cycles } else { 0 };
                CacheAccess { hit: false, cycles, writeback: wb }
            }
            (WritePolicy::WriteThrough, Some(i)) => {
                self.touch(i);
                self.stats.write_throughs += 1;
                CacheAccess { hit: true, cycles: self.spec.write_through_cycles, writeback: false }
            }
            (WritePolicy::WriteThrough, None) => {
                self.stats.write_misses += 1;
                self.stats.write_throughs += 1;
                CacheAccess { hit: false, cycles: self.spec.write_through_cycles, writeback: false }
            }
        };
        self.stats.cycles += r.cycles as u64;
        r
    }

    /// `dcbz`: the line becomes zeros without a memory read.
    pub fn zero_line(&mut self, addr: u64, policy: WritePolicy) -> CacheAccess {
        self.stats.zeroed_lines += 1;
        let (hit, wb) = match self.find(addr) {
            Some(i) => {
                self.touch(i);
                self.lines[i].dirty = policy == WritePolicy::CopyBack;
                (true, false)
            }
            None => (false, self.allocate(addr, policy == WritePolicy::CopyBack)),
        };
        let mut cycles = self.spec.hit_cycles + if wb { self.spec.writeback_cycles } else { 0 };
        if policy == WritePolicy::WriteThrough {
            cycles += self.spec.writeback_cycles;
            self.stats.write_throughs += 1;
        }
        self.stats.cycles += cycles as u64;
        CacheAccess { hit, cycles, writeback: wb }
    }

    /// Write every modified line back (as a `dcbst` sweep would); returns the cycles.
    pub fn flush_all(&mut self) -> u64 {
        let mut n = 0u64;
        for l in &mut self.lines {
            if l.valid && l.dirty {
                l.dirty = false;
                n += 1;
            }
        }
        self.stats.writebacks += n;
        let c = n * self.spec.writeback_cycles as u64;
        self.stats.cycles += c;
        c
    }

    #[inline]
    fn index(&self, addr: u64) -> (usize, u64) {
        let line = addr >> self.line_shift;
        ((line & self.set_mask) as usize, line >> self.set_mask.count_ones())
    }

    fn set(&self, set: usize) -> &[Line] {
        let w = self.spec.ways as usize;
        &self.lines[set * w..(set + 1) * w]
    }

    #[inline]
    fn find(&self, addr: u64) -> Option<usize> {
        let (set, tag) = self.index(addr);
        let w = self.spec.ways as usize;
        (set * w..(set + 1) * w).find(|&i| self.lines[i].valid && self.lines[i].tag == tag)
    }

    #[inline]
    fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.lines[i].used = self.clock;
    }

    /// Bring `addr`'s line in: invalid way first (lowest way), else LRU. Returns whether a
    /// modified victim was written back.
    fn allocate(&mut self, addr: u64, dirty: bool) -> bool {
        let (set, tag) = self.index(addr);
        let w = self.spec.ways as usize;
        let range = set * w..(set + 1) * w;
        let victim = range
            .clone()
            .find(|&i| !self.lines[i].valid)
            .unwrap_or_else(|| range.min_by_key(|&i| self.lines[i].used).expect("ways >= 1"));
        let wb = self.lines[victim].valid && self.lines[victim].dirty;
        if wb {
            self.stats.writebacks += 1;
        }
        self.lines[victim] = Line { tag, valid: true, dirty, used: 0 };
        self.touch(victim);
        wb
    }
}

#[cfg(test)]
mod tests;
