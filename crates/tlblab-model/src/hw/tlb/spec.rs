//! What a TLB hierarchy is built from and reports: page sizes, access kinds, which accesses a
//! structure serves, geometry, inclusion policy, structure specs and counters.

use serde::{Deserialize, Serialize};

/// Page sizes a TLB entry can map: x86 (4K, 2M, 1G) and PowerPC 8xx (4K, 512K, 8M).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4k")]
    Size4K = 0,
    #[serde(rename = "512k")]
    Size512K = 1,
    #[serde(rename = "2m")]
    Size2M = 2,
    #[serde(rename = "8m")]
    Size8M = 3,
    #[serde(rename = "1g")]
    Size1G = 4,
}

pub const NR_PAGE_SIZES: usize = 5;

impl PageSize {
    pub const ALL: [PageSize; NR_PAGE_SIZES] =
        [PageSize::Size4K, PageSize::Size512K, PageSize::Size2M, PageSize::Size8M, PageSize::Size1G];

    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size512K => 19,
            PageSize::Size2M => 21,
            PageSize::Size8M => 23,
            PageSize::Size1G => 30,
        }
    }

    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    pub fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size512K => "512k",
            PageSize::Size2M => "2m",
            PageSize::Size8M => "8m",
            PageSize::Size1G => "1g",
        }
    }

    pub fn parse(s: &str) -> Option<PageSize> {
        PageSize::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(s))
    }
}

/// What a memory access is, as the TLB sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Fetch = 0,
    Load = 1,
    Store = 2,
}

pub const NR_ACCESS_KINDS: usize = 3;

impl AccessKind {
    pub const ALL: [AccessKind; NR_ACCESS_KINDS] = [AccessKind::Fetch, AccessKind::Load, AccessKind::Store];
}

/// Which accesses a TLB structure serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Serves {
    Instruction,
    /// Loads and stores.
    Data,
    /// Loads only (a split load/store DTLB, e.g. Golden Cove).
    Load,
    /// Stores only.
    Store,
    /// Everything (an STLB shared by instructions and data).
    Unified,
}

impl Serves {
    pub fn covers(self, kind: AccessKind) -> bool {
        matches!(
            (self, kind),
            (Serves::Unified, _)
                | (Serves::Instruction, AccessKind::Fetch)
                | (Serves::Data, AccessKind::Load | AccessKind::Store)
                | (Serves::Load, AccessKind::Load)
                | (Serves::Store, AccessKind::Store)
        )
    }

    /// The side a structure belongs to when counting per level.
    pub(super) fn side(self) -> Side {
        match self {
            Serves::Instruction => Side::Instruction,
            Serves::Data | Serves::Load | Serves::Store => Side::Data,
            Serves::Unified => Side::Unified,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Instruction,
    Data,
    Unified,
}

/// How the levels relate when an entry moves between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inclusion {
    /// A walk fills every level; evictions at one level do not touch the others.
    NonInclusive,
    /// As non-inclusive, and evicting an entry from an outer level removes it from inner levels.
    Inclusive,
    /// A walk fills level 1 only; level-1 victims move to level 2; a level-2 hit moves the entry
    /// back to level 1. "Level 1" and "level 2" are the innermost and next levels holding the
    /// page size: a size level 1 has no array for lives in level 2, and is neither lost by a
    /// walk nor by a hit.
    Exclusive,
}

/// Sets x ways of one array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub(super) sets: u32,
    pub(super) ways: u32,
}

impl Geometry {
    /// The most ways of one set.
    pub const MAX_WAYS: u32 = 4096;
    /// The most entries (sets x ways) of one array: 256 times the largest real TLB (4096
    /// entries); each entry is held in memory, so a hostile geometry is refused, not allocated.
    pub const MAX_ENTRIES: u64 = 1 << 20;

    pub fn new(sets: u32, ways: u32) -> Result<Geometry, String> {
        if sets == 0 || !sets.is_power_of_two() {
            return Err(format!(
                "{sets} sets: the number of sets must be a power of two (1 = fully associative)"
            ));
        }
        if ways == 0 || ways > Self::MAX_WAYS {
            return Err(format!("{ways} ways: allowed 1 ..= {}", Self::MAX_WAYS));
        }
        // In u64: the product of two u32 may not fit one.
        let entries = sets as u64 * ways as u64;
        if entries > Self::MAX_ENTRIES {
            return Err(format!(
                "{sets} sets x {ways} ways = {entries} entries: allowed at most {} entries",
                Self::MAX_ENTRIES
            ));
        }
        Ok(Geometry { sets, ways })
    }

    pub fn sets(self) -> u32 {
        self.sets
    }
    pub fn ways(self) -> u32 {
        self.ways
    }
    pub fn entries(self) -> u32 {
        self.sets * self.ways
    }
}

/// The description of one structure that [`super::TlbHierarchy::new`] builds from.
#[derive(Debug, Clone, PartialEq)]
pub struct StructureSpec {
    pub name: String,
    pub level: u8,
    pub serves: Serves,
    pub page_sizes: Vec<PageSize>,
    pub geometry: Geometry,
}

/// Hits and misses of one level as seen by one side (e.g. "L1 DTLB", "STLB").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCounters {
    /// `[access kind][user=0 / kernel=1]`.
    pub hits: [[u64; 2]; NR_ACCESS_KINDS],
    pub misses: [[u64; 2]; NR_ACCESS_KINDS],
}

impl LevelCounters {
    pub fn total_hits(&self) -> u64 {
        self.hits.iter().flatten().sum()
    }
    pub fn total_misses(&self) -> u64 {
        self.misses.iter().flatten().sum()
    }
}

/// A named view of one level for one side, over the arrays of every page size.
#[derive(Debug, Clone)]
pub struct LevelView {
    pub name: String,
    pub level: u8,
    pub counters: LevelCounters,
}

/// Maintenance counters of one hierarchy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushCounters {
    pub invlpg: u64,
    pub flush_asid: u64,
    pub flush_all_asids: u64,
    pub flush_global: u64,
    /// Valid entries removed by any invalidation.
    pub entries_invalidated: u64,
}
