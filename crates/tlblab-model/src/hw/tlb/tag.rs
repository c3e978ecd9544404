//! The tag of a cached translation (valid, global, page size, vpn, address-space id) and the map
//! from architectural address-space ids (ASID/PCID) to the internal ids the tags hold.

use super::spec::PageSize;

// Tag layout: valid | global | no-id (lookup keys only) | spare | page size (3 bits) | vpn (45 bits:
// a 57-bit linear address) | id (12).
//
// The id field holds an internal address-space id, not the architectural ASID/PCID: see
// [`AsidIds`]. A global entry has id 0 and the global bit, so it never equals a non-global key
// and a lookup is at most two plain compares per way: against the address space's key and against
// the global key.
pub(super) const VALID: u64 = 1 << 63;
pub(super) const GLOBAL: u64 = 1 << 62;
/// In a lookup key: the address space has no id, so no stored key can match (never stored).
pub(super) const NO_ID: u64 = 1 << 61;
pub(super) const SIZE_SHIFT: u32 = 57;
pub(super) const VPN_SHIFT: u32 = 12;
pub(super) const ASID_MASK: u64 = (1 << VPN_SHIFT) - 1;
/// The bits of a key naming the page: its size and vpn.
pub(super) const PAGE_BITS: u64 = ((1 << 60) - 1) & !ASID_MASK;
/// The bits of a key naming the address space.
pub(super) const ID_BITS: u64 = ASID_MASK | NO_ID;
pub(super) const LA_MASK: u64 = (1 << 57) - 1;

/// The largest address-space id a tag can hold.
pub const MAX_ASID: u16 = ASID_MASK as u16;
/// Architectural address-space ids, and internal ids: one per value of the 12-bit field.
pub(super) const NR_IDS: usize = MAX_ASID as usize + 1;

#[inline(always)]
pub(super) fn vpn_of(va: u64, size: PageSize) -> u64 {
    (va & LA_MASK) >> size.shift()
}

/// The key of a non-global translation; `id` is an address space's [`AsidIds::key`] bits.
#[inline(always)]
pub(super) fn make_tag(vpn: u64, size: PageSize, id: u64) -> u64 {
    VALID | ((size as u64) << SIZE_SHIFT) | (vpn << VPN_SHIFT) | id
}

/// The tag of a global entry of logical processor 0 that would translate a lookup for `want`;
/// `| gid` (see [`lp_gid`]) makes it another logical processor's.
#[inline(always)]
pub(super) fn global_key(want: u64) -> u64 {
    (want & !ID_BITS) | GLOBAL
}

/// The id bits of logical processor `lp`'s global entries. Entries of SMT siblings sharing an
/// array are tagged with the logical processor that made them, global ones included (see
/// [`AsidIds`]): a global entry keeps the number of its logical processor in the id field,
/// which a non-global key uses for its address space.
#[inline(always)]
pub(super) const fn lp_gid(lp: usize) -> u64 {
    lp as u64
}

/// Most logical processors one hierarchy serves: an owner is `lp << 12 | asid` in a `u16`
/// below `UNOWNED`.
pub const MAX_LPS: usize = 8;
const LP_SHIFT: u32 = 12;

/// The vpn field of a tag.
#[inline(always)]
pub(super) fn tag_vpn(tag: u64) -> u64 {
    (tag & ((1 << SIZE_SHIFT) - 1)) >> VPN_SHIFT
}

/// The page size field of a tag.
#[inline(always)]
pub(super) fn tag_size(tag: u64) -> PageSize {
    PageSize::ALL[((tag >> SIZE_SHIFT) & 7) as usize]
}

/// Marks an internal id no address space holds: free, or stale (its entries were flushed).
pub(super) const UNOWNED: u16 = u16::MAX;

/// The map from architectural address-space ids (ASID/PCID) to the internal ids the tags hold,
/// which makes flushing an address space O(1): the address space gets a fresh id (on its next
/// fill), and the entries keyed by the old one become stale.
///
/// A stale entry is invalid in every respect: no lookup key names its id, [`Self::live`] is
/// false for it, so victim selection prefers it exactly as it prefers an invalidated way, and it
/// is not counted or listed. Stale entries are zeroed and their ids recycled by a purge when the
/// ids run out ([`TlbHierarchy::purge`]), so a flush costs O(1) amortized.
///
/// A global entry and a non-global one of ASID 0 for the same page share one key, so a fill of
/// either replaces the other ([`Self::alias`]): a global translation serves every PCID (the SDM
/// vol. 3A §4.10.2.4), so one entry stands for both, and results stay those of the tags that
/// held the ASID itself.
///
/// SMT: the ids are the core's, and an id is held by one (logical processor, ASID) pair: Intel
/// tags every TLB entry with the logical processor that made it (the SDM vol. 3A §8.7.13.2; a
/// one-bit thread id beside the PCID, per the optimization manual's "competitively shared"
/// TLBs), so siblings sharing an array never hit each other's entries even with the same PCID,
/// and each one's invalidations drop only its own. Distinct ids give exactly that.
// In declaration order (`repr(C)`): what every lookup and fill reads first, in the line the
// hierarchy begins with (see `TlbHierarchy`).
#[derive(Debug, Clone)]
#[repr(C)]
pub(super) struct AsidIds {
    /// Per logical processor, per architectural ASID (`[lp * NR_IDS + asid]`): its id (as key
    /// bits), or [`NO_ID`]. An ASID gets an id when it fills.
    pub(super) key: Box<[u64]>,
    /// Per id: the `lp << 12 | asid` holding it, or [`UNOWNED`].
    pub(super) owner: Box<[u16; NR_IDS]>,
    /// Per id: the valid non-global entries keyed by it, live or stale; kept only while
    /// `tracking`.
    pub(super) count: Box<[u32; NR_IDS]>,
    /// Set by the first flush of an address space. Until then no entry is stale and `count` is
    /// not kept, so fills (the trace driver's hot path) pay for neither.
    pub(super) tracking: bool,
    /// Ids that no ASID holds and no entry uses, to hand out (a stack).
    pub(super) free: Vec<u16>,
    /// Per logical processor, a bitset of the ASIDs holding an id (`[lp * NR_IDS / 64 + word]`).
    pub(super) named: Box<[u64]>,
    /// Purges so far (for tests).
    pub(super) purges: u64,
}

impl AsidIds {
    /// The ids of `lps` logical processors (1 ..= [`MAX_LPS`]).
    pub(super) fn new(lps: usize) -> AsidIds {
        assert!((1..=MAX_LPS).contains(&lps));
        AsidIds {
            key: vec![NO_ID; lps * NR_IDS].into_boxed_slice(),
            owner: Box::new([UNOWNED; NR_IDS]),
            count: Box::new([0; NR_IDS]),
            free: (0..NR_IDS as u16).rev().collect(),
            named: vec![0; lps * NR_IDS / 64].into_boxed_slice(),
            tracking: false,
            purges: 0,
        }
    }

    /// The key bits of `asid` on logical processor `lp`: its id, or [`NO_ID`] (no entry of it
    /// exists).
    #[inline(always)]
    pub(super) fn key(&self, lp: usize, asid: u16) -> u64 {
        debug_assert!(asid <= MAX_ASID, "address-space id {asid} > {MAX_ASID}");
        self.key[lp * NR_IDS + (asid as usize & (NR_IDS - 1))]
    }

    /// The words of `lp`'s bitset of named ASIDs.
    pub(super) fn named_words(&self, lp: usize) -> std::ops::Range<usize> {
        lp * NR_IDS / 64..(lp + 1) * NR_IDS / 64
    }

    /// The logical processor and ASID of word `word`'s bit `bit` of [`Self::named`].
    pub(super) fn named_at(word: usize, bit: u32) -> (usize, u16) {
        let i = word * 64 + bit as usize;
        (i / NR_IDS, (i % NR_IDS) as u16)
    }

    /// A stored tag is a live entry: valid, and global or keyed by an id an ASID holds.
    #[inline(always)]
    pub(super) fn live(&self, tag: u64) -> bool {
        tag & VALID != 0
            && (tag & GLOBAL != 0 || !self.tracking || self.owner[(tag & ASID_MASK) as usize] != UNOWNED)
    }

    /// The ASID of a live non-global entry.
    pub(super) fn asid_of(&self, tag: u64) -> u16 {
        self.owner[(tag & ASID_MASK) as usize] & MAX_ASID
    }

    /// The logical processor a live entry belongs to.
    #[inline(always)]
    pub(super) fn lp_of(&self, tag: u64) -> usize {
        if tag & GLOBAL != 0 {
            (tag & ASID_MASK) as usize
        } else {
            (self.owner[(tag & ASID_MASK) as usize] >> LP_SHIFT) as usize
        }
    }

    /// Accounts for a way holding `old` now holding `new` (0 = cleared).
    #[inline(always)]
    pub(super) fn replaced(&mut self, old: u64, new: u64) {
        if self.tracking {
            if old & (VALID | GLOBAL) == VALID {
                self.count[(old & ASID_MASK) as usize] -= 1;
            }
            if new & (VALID | GLOBAL) == VALID {
                self.count[(new & ASID_MASK) as usize] += 1;
            }
        }
    }

    /// The other tag that used to share `tag`'s key (see the type's docs): ASID 0's tag of a
    /// global entry's page and the reverse; `tag` itself if there is none.
    /// Within one logical processor (`tag` is live, of the logical processor about to fill it).
    pub(super) fn alias(&self, tag: u64) -> u64 {
        let lp = self.lp_of(tag);
        let zero = self.key(lp, 0);
        if zero == NO_ID {
            tag
        } else if tag & GLOBAL != 0 {
            (tag & !(GLOBAL | ID_BITS)) | zero
        } else if tag & ASID_MASK == zero {
            global_key(tag) | lp_gid(lp)
        } else {
            tag
        }
    }

    /// Gives `asid` of `lp` (which has none) a free id; there must be one.
    #[cold]
    #[inline(never)]
    pub(super) fn name(&mut self, lp: usize, asid: u16) -> u64 {
        let asid = asid & MAX_ASID;
        let id = self.free.pop().expect("no free address-space id");
        self.bind(lp, asid, id);
        id as u64
    }

    /// Gives `asid` of `lp` (which has none) the id `id`.
    pub(super) fn bind(&mut self, lp: usize, asid: u16, id: u16) {
        self.owner[id as usize] = (lp as u16) << LP_SHIFT | asid;
        self.key[lp * NR_IDS + asid as usize] = id as u64;
        self.named[(lp * NR_IDS + asid as usize) / 64] |= 1 << (asid % 64);
    }

    /// Takes the id of `asid` of `lp` away: its entries, if any, become stale.
    pub(super) fn unbind(&mut self, lp: usize, asid: u16) {
        let i = lp * NR_IDS + asid as usize;
        let id = self.key[i] as usize;
        self.owner[id] = UNOWNED;
        self.key[i] = NO_ID;
        self.named[i / 64] &= !(1 << (asid % 64));
    }

    /// Rebuilds the free list from the unowned ids, once no entry uses them.
    pub(super) fn recycle_unowned(&mut self) {
        self.free.clear();
        for id in (0..NR_IDS).rev() {
            if self.owner[id] == UNOWNED {
                self.count[id] = 0;
                self.free.push(id as u16);
            }
        }
    }
}
