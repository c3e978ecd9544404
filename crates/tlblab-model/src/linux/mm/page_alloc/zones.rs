//! A node's zones and the rules that choose among them (include/linux/mmzone.h `enum
//! zone_type`, mm/page_alloc.c v4.2).
//!
//! Without a named machine (no `ram_pages`) every node has one `ZONE_NORMAL` (a kernel
//! modelled with one zone per node). A workload that names the machine it scales down (`ram_mib=`) gets
//! x86-64's zones of that machine ([`Layout::x86_64`]), each simulated zone the same share of
//! the simulated node as of the named one, sized (watermarks, `lowmem_reserve`, per-CPU lists,
//! reclaim's scan targets) as the named machine's zone.
//!
//! Rules (v4.2 unless marked):
//! - `setup_per_zone_lowmem_reserve`: a zone keeps `lowmem_reserve[j]` = (managed pages of the
//!   node's zones above it up to `j`) / `sysctl_lowmem_reserve_ratio[its index]` free from an
//!   allocation whose class zone (`zone_idx(preferred_zone)`) is `j`; `zone_watermark_ok` adds it
//!   to the mark.
//! - `__setup_per_zone_wmarks`: `min_free_kbytes` shared over the zones in proportion to their
//!   managed pages (`lowmem_pages` counts every zone, ZONE_DMA too); `NR_ALLOC_BATCH` starts at
//!   `high - low`.
//! - The fair zone allocation policy (v3.12 .. v4.7, `ALLOC_FAIR`): the fast path's first walk
//!   of the zonelist stays on the local node (`zone_local`) and skips a zone whose
//!   `NR_ALLOC_BATCH` is used up (`ZONE_FAIR_DEPLETED`); every allocation takes its pages off
//!   its zone's batch (`buffered_rmqueue`); a walk that skipped a depleted zone and found nothing
//!   resets every local zone's batch to `high - low` (`reset_alloc_batches`) and walks again
//!   without the policy. So page-cache and anonymous pages are spread over a node's zones in
//!   proportion to their sizes (their `high - low` gaps). Gone in v4.8 (node LRUs).

use serde::{Deserialize, Serialize};

use super::PageAlloc;
use crate::linux::config::KernelConfig;
use crate::linux::include::linux::gfp::PAGES_PER_NODE;
use crate::linux::include::linux::mmzone::MigrateType;

/// `enum zone_type` on x86-64 (no HIGHMEM; `ZONE_MOVABLE` is empty unless `kernelcore=` or
/// `movablecore=` is given, and is not modelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ZoneType {
    /// Below 16 MiB (ISA DMA).
    Dma = 0,
    /// Below 4 GiB (32-bit DMA).
    Dma32 = 1,
    Normal = 2,
}

/// `MAX_NR_ZONES` of the modelled zone types.
pub const MAX_NR_ZONES: usize = 3;

impl ZoneType {
    pub fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
        }
    }
}

/// `sysctl_lowmem_reserve_ratio[]` for ZONE_DMA and ZONE_DMA32 (v4.2, x86-64: 256 each; the
/// third entry, 32, protects ZONE_NORMAL from ZONE_MOVABLE, which is empty).
const LOWMEM_RESERVE_RATIO: [u64; 2] = [256, 256];

/// How a node's several zones are used: the era's rules. A kernel without them models one zone
/// per node and refuses a named machine's zone split (run::run names the knob).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneRules {
    /// v3.12 .. v4.7: per-zone LRU lists, watermarks, per-CPU lists and reclaim (kswapd's
    /// `balance_pgdat` zone by zone, direct reclaim's `shrink_zones` over the zonelist), the fair
    /// zone allocation policy; modelled as v4.2 has them.
    #[serde(rename = "v4.2")]
    V4_2,
}

/// One zone of a node: its type, the pages simulated (0: the zone enters only the size
/// arithmetic) and the named machine's managed pages it is sized as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneSpec {
    pub ty: ZoneType,
    pub pages: u64,
    pub sized_as: u64,
}

/// Every node's zones, lowest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub nodes: Vec<Vec<ZoneSpec>>,
}

/// Pages of 4 KiB below 16 MiB (`MAX_DMA_PFN`).
const DMA_PAGES: u64 = 4096;
/// ZONE_DMA's present pages on a PC: 16 MiB less page 0 and the 640 KiB - 1 MiB legacy hole
/// (96 pages): 3999, as x86-64 boot logs print ("DMA zone: 3999 pages").
const DMA_PRESENT: u64 = 3999;
/// RAM below 4 GiB on the named machine: the PCI (MMIO) hole is assumed to start at 3 GiB (TOLUD
/// 0xC0000000; desktop boards of the Ivy Bridge era put it between 3 and 3.5 GiB); the RAM it
/// hides is remapped above 4 GiB, into ZONE_NORMAL. The seed gives no e820 map.
const LOW_RAM_PAGES: u64 = 3 << 18;
/// The buddy allocator's boot unit (4 MiB): simulated zones are whole blocks.
const BLOCK: u64 = 1024;

impl Layout {
    /// One `ZONE_NORMAL` of `node_pages` per node, sized as itself.
    pub fn one_zone_per_node(nodes: u32, node_pages: u64) -> Layout {
        let z = ZoneSpec { ty: ZoneType::Normal, pages: node_pages, sized_as: node_pages };
        Layout { nodes: vec![vec![z]; nodes as usize] }
    }

    /// x86-64's zones of a machine of `nodes` nodes with `ram_pages` of RAM each (node 0 holds
    /// the lowest addresses), simulated on `node_pages` per node: ZONE_DMA (16 MiB; sized, never
    /// simulated: its `lowmem_reserve` against a Normal-class allocation, (DMA32 + Normal) / 256,
    /// is larger than the zone, so no GFP_HIGHUSER_MOVABLE or GFP_KERNEL allocation takes from it
    /// and it has no LRU pages to reclaim), ZONE_DMA32 (the RAM from 16 MiB to the PCI hole) and
    /// ZONE_NORMAL (the rest). A simulated zone is the named zone's share of the node, rounded
    /// to whole 4 MiB blocks (at least one).
    pub fn x86_64(nodes: u32, node_pages: u64, ram_pages: u64) -> Layout {
        let overlap = |a: u64, b: u64, lo: u64, hi: u64| b.min(hi).saturating_sub(a.max(lo));
        let blocks = node_pages / BLOCK;
        let nodes = (0..nodes as u64)
            .map(|n| {
                let (a, b) = (n * ram_pages, (n + 1) * ram_pages);
                let dma = overlap(a, b, 0, DMA_PAGES);
                let dma32 = overlap(a, b, DMA_PAGES, LOW_RAM_PAGES);
                let normal = ram_pages - dma - dma32;
                let mut zones = Vec::new();
                if dma > 0 {
                    zones.push(ZoneSpec { ty: ZoneType::Dma, pages: 0, sized_as: dma.min(DMA_PRESENT) });
                }
                // The simulated node holds DMA32 and Normal in their named proportion.
                let mut sim32 = if dma32 == 0 {
                    0
                } else {
                    ((dma32 * blocks + (dma32 + normal) / 2) / (dma32 + normal)).clamp(1, blocks)
                };
                if normal > 0 && dma32 > 0 {
                    sim32 = sim32.min(blocks - 1);
                }
                if dma32 > 0 {
                    zones.push(ZoneSpec { ty: ZoneType::Dma32, pages: sim32 * BLOCK, sized_as: dma32 });
                }
                if normal > 0 {
                    let pages = node_pages - sim32 * BLOCK;
                    zones.push(ZoneSpec { ty: ZoneType::Normal, pages, sized_as: normal });
                }
                zones
            })
            .collect();
        Layout { nodes }
    }

    /// What boot lays out for `config` on `nodes` nodes: the named machine's x86-64 zones when a
    /// workload scales one down (`ram_pages`), else one zone per node.
    pub fn boot(nodes: u32, config: &KernelConfig) -> Layout {
        let node_pages = config.node_pages.unwrap_or(PAGES_PER_NODE);
        match config.ram_pages {
            Some(ram) => Layout::x86_64(nodes, node_pages, ram),
            None => Layout::one_zone_per_node(nodes, node_pages),
        }
    }

    /// `lowmem_pages` of `__setup_per_zone_wmarks` (and `nr_free_buffer_pages` at boot, which
    /// `min_free_kbytes` is computed from): every zone's managed pages.
    pub fn lowmem_pages(&self) -> u64 {
        self.nodes.iter().flatten().map(|z| z.sized_as).sum()
    }

    /// `setup_per_zone_lowmem_reserve()` for zone `i` of `node`: what it keeps free from an
    /// allocation of each class zone.
    pub fn lowmem_reserve(&self, node: usize, i: usize) -> [u64; MAX_NR_ZONES] {
        let zones = &self.nodes[node];
        let mut r = [0; MAX_NR_ZONES];
        let own = zones[i].ty as usize;
        let mut above = 0;
        for z in &zones[i + 1..] {
            above += z.sized_as;
            let ratio = LOWMEM_RESERVE_RATIO.get(own).copied().unwrap_or(1);
            r[z.ty as usize] = above / ratio;
        }
        // A class zone the node lacks between two it has reserves as the next one below it.
        for j in own + 1..MAX_NR_ZONES {
            if r[j] == 0 {
                r[j] = r[j - 1];
            }
        }
        r
    }
}

/// A workload's memory of `pages` split evenly over `nodes` in whole 4 MiB blocks (the
/// allocator's boot unit): the pages per node.
pub fn node_pages(nodes: u32, pages: u64) -> Result<u64, String> {
    let n = nodes as u64;
    if pages % (n * BLOCK) != 0 {
        return Err(format!(
            "memory of {} MiB does not split into whole 4 MiB blocks over {nodes} nodes",
            pages >> 8
        ));
    }
    Ok(pages / n)
}

/// Gives `config` nodes of `node_pages`, sized as a named machine's `ram_pages` per node if the
/// workload scales one down. A node that then has several zones needs the era's rules for them.
pub fn size_nodes(
    config: &mut KernelConfig,
    nodes: u32,
    node_pages: u64,
    ram_pages: Option<u64>,
) -> Result<(), String> {
    config.node_pages = Some(node_pages);
    config.ram_pages = ram_pages;
    let several =
        Layout::boot(nodes, config).nodes.iter().any(|z| z.iter().filter(|z| z.pages > 0).count() > 1);
    if several && config.zones.is_none() {
        return Err(format!(
            "its machine has x86-64's ZONE_DMA32 and ZONE_NORMAL, and kernel `{}` models one zone per \
             node: key `page_alloc.zones` is not set; allowed: v4.2 (v3.12..v4.7 kernels)",
            config.name
        ));
    }
    Ok(())
}

impl PageAlloc {
    /// Nodes of the machine.
    pub fn nr_nodes(&self) -> usize {
        self.zonelists.len()
    }

    /// Node `node`'s zones (indices into `zones`), lowest first.
    pub fn node_zones(&self, node: usize) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.zones.len()).filter(move |&z| self.zones[z].node as usize == node)
    }

    /// The zonelist of a Normal-class allocation on `node`.
    pub fn zonelist(&self, node: usize) -> &[usize] {
        &self.zonelists[node]
    }

    /// The class zone of an allocation on `node` (`zone_idx(preferred_zone)`): the first zone of
    /// its zonelist.
    pub fn classzone(&self, node: usize) -> ZoneType {
        self.zones[self.zonelists[node][0]].ty
    }

    /// `zone_watermark_ok()` (order 0 .. MAX_ORDER - 1) of zone `zi` at `mark` for an allocation
    /// of class zone `classzone`: above the mark plus the zone's `lowmem_reserve` for it.
    pub fn watermark_ok(&self, zi: usize, order: u8, mark: u64, classzone: ZoneType) -> bool {
        let z = &self.zones[zi];
        z.watermark_ok(order, mark + z.lowmem_reserve[classzone as usize])
    }

    /// `reset_alloc_batches()` (v4.2): every zone of the node gets `high - low` again.
    pub(super) fn reset_alloc_batches(&mut self, node: usize) {
        for z in self.zones.iter_mut().filter(|z| z.node as usize == node) {
            z.alloc_batch = (z.wmark.high - z.wmark.low) as i64;
            z.fair_depleted = false;
        }
    }

    /// How many order-0 `mt` pages `cpu` could take now (up to `want`) before the slow path's
    /// `ALLOC_WMARK_MIN` walk of its node's zones fails: each allocation first needs its zone
    /// above `min` plus `lowmem_reserve` (`zone_watermark_ok`), then takes the CPU's per-CPU list,
    /// refilled `batch` pages at a time from the buddy lists when empty (so a refill can take a
    /// zone below its mark with the refill's other pages stranded on the list).
    pub fn min_capacity(&self, cpu: u32, mt: MigrateType, want: u64) -> u64 {
        let node = self.node_of_cpu(cpu) as usize;
        let class = self.classzone(node) as usize;
        let pindex = self.cfg.pcp_lists.pindex(mt as usize, 0);
        let mut n = 0;
        for zi in self.zonelists[node].iter().copied().filter(|&zi| self.zones[zi].node as usize == node) {
            let z = &self.zones[zi];
            let mark = z.wmark.min + z.lowmem_reserve[class];
            let pcp = &z.pcp[cpu as usize];
            let (mut free, mut cached) = (z.nr_free, pcp.lists[pindex].len as u64);
            while n < want && free > mark {
                if cached == 0 {
                    cached = pcp.batch.min(free);
                    free -= cached;
                }
                cached -= 1;
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_8_gib_box_has_dma_dma32_below_the_pci_hole_and_normal_above() {
        // 256 MiB simulated for 8 GiB on one node: DMA32 = 3 GiB - 16 MiB, Normal = 5 GiB.
        let l = Layout::x86_64(1, 256 << 8, 8192 << 8);
        let z = &l.nodes[0];
        assert_eq!(z.len(), 3);
        assert_eq!(z[0], ZoneSpec { ty: ZoneType::Dma, pages: 0, sized_as: 3999 });
        assert_eq!(z[1], ZoneSpec { ty: ZoneType::Dma32, pages: 24 << 10, sized_as: 782_336 });
        assert_eq!(z[2], ZoneSpec { ty: ZoneType::Normal, pages: 40 << 10, sized_as: 1_310_720 });
        assert_eq!(l.lowmem_pages(), 2_097_055);
        // DMA32 keeps Normal / 256 = 5120 pages (20 MiB) from a Normal-class allocation; DMA
        // keeps (DMA32 + Normal) / 256 = 8176, more than it has.
        assert_eq!(l.lowmem_reserve(0, 1), [0, 0, 5120]);
        assert_eq!(l.lowmem_reserve(0, 0), [0, 782_336 / 256, 2_093_056 / 256]);
        assert_eq!(l.lowmem_reserve(0, 2), [0, 0, 0]);
        // A 1 GiB box has no Normal zone; two nodes of 8 GiB: node 1 is all Normal.
        let small = Layout::x86_64(1, 64 << 8, 1024 << 8);
        assert_eq!(small.nodes[0].iter().map(|z| z.ty).collect::<Vec<_>>(), [ZoneType::Dma, ZoneType::Dma32]);
        assert_eq!(small.nodes[0][1].pages, 64 << 8);
        let two = Layout::x86_64(2, 256 << 8, 8192 << 8);
        assert_eq!(
            two.nodes[1],
            vec![ZoneSpec { ty: ZoneType::Normal, pages: 256 << 8, sized_as: 8192 << 8 }]
        );
    }
}
