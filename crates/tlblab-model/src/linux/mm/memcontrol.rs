//! One memory cgroup's limit on a workload's page cache (mm/memcontrol.c; the rule is the same
//! from v2.6.25's limit reclaim to v6.18's `try_charge_memcg`, docs/references/linux-mm.md#memcg-limit):
//! - `filemap_add_folio` charges each new page-cache page to the cgroup (`mem_cgroup_charge`);
//!   a charge that would take the usage past the limit (`page_counter_try_charge` fails)
//!   reclaims from the cgroup's own LRU in the charging task first
//!   (`try_to_free_mem_cgroup_pages`, `nr_to_reclaim = max(nr_pages, SWAP_CLUSTER_MAX)`, the
//!   priority loop of direct reclaim over the cgroup's lruvecs), then charges again. It wakes
//!   no kswapd and counts no `allocstall`: the machine's free memory is not low.
//! - The reclaimed pages are uncharged as they are freed (`mem_cgroup_uncharge_folios` before
//!   `free_unref_folios`, at the end of `shrink_folio_list`'s batch).
//!
//! The model charges page-cache fills of files (linux/mm/filemap.rs), the only memory of the
//! workload that sets a limit (vm-scalability's readers); its page tables and stacks, which
//! Linux charges too, are a few pages. The cgroup's LRU is the zones' LRU: every page on it is
//! the cgroup's.

use crate::linux::Kernel;

/// The cgroup's limit and usage, in pages (`memory.max` / `memory.limit_in_bytes`, and the
/// page counter's `usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemCgroup {
    pub max: u64,
    pub usage: u64,
}

impl MemCgroup {
    /// Whether charging `pages` more would pass the limit (`page_counter_try_charge` fails).
    pub fn over(&self, pages: u64) -> bool {
        self.usage + pages > self.max
    }
}

impl Kernel {
    /// Puts the workload in a memory cgroup limited to `pages` (set before it runs).
    pub fn set_memcg_limit(&mut self, pages: u64) {
        self.mm.memcg = Some(MemCgroup { max: pages, usage: 0 });
    }

    /// Whether a charge of `pages` would pass the cgroup's limit (no cgroup: never).
    pub(in crate::linux) fn memcg_over(&self, pages: u64) -> bool {
        self.mm.memcg.is_some_and(|m| m.over(pages))
    }

    /// `mem_cgroup_charge` of a new page-cache page (its reclaim, if any, came first).
    pub(in crate::linux) fn memcg_charge(&mut self) {
        if let Some(m) = &mut self.mm.memcg {
            m.usage += 1;
        }
    }

    /// `mem_cgroup_uncharge_folios` of `pages` page-cache pages reclaim frees.
    pub(in crate::linux) fn memcg_uncharge(&mut self, pages: u64) {
        if let Some(m) = &mut self.mm.memcg {
            m.usage = m.usage.saturating_sub(pages);
        }
    }

    /// The cgroup's usage and limit, in pages, where the workload has one.
    pub fn memcg(&self) -> Option<MemCgroup> {
        self.mm.memcg
    }
}

#[cfg(test)]
mod tests {
    use super::MemCgroup;

    #[test]
    fn a_charge_fails_only_past_the_limit() {
        let m = MemCgroup { max: 32, usage: 31 };
        assert!(!m.over(1));
        assert!(m.over(2));
        assert!(MemCgroup { max: 32, usage: 32 }.over(1));
    }
}
