//! The buddy and per-CPU lists against a brute-force reference under random alloc/free
//! sequences: no block handed out twice, every page accounted for exactly once, merges only of
//! free buddies (and complete), counters consistent, and the same sequence gives the same bytes.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::linux::mm::page_alloc::fixtures::{LINES, PAGE_ALLOC};

const TOPO: Topology = Topology { sockets: 2, cores_per_socket: 2, threads_per_core: 1 };
/// 128 MiB per node: batch 7, so the lists fill and drain often.
const NODE_PAGES: u64 = 32_768;

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        cpu: u32,
        order: u8,
        mt: u8,
        dt: u16,
    },
    /// Free the live block at this index (modulo the count), on this CPU.
    Free {
        cpu: u32,
        pick: u16,
        dt: u16,
    },
    Drain {
        cpu: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let order = prop_oneof![6 => Just(0u8), 3 => 1u8..=3, 1 => 4u8..=10];
    prop_oneof![
        5 => (0u32..4, order, 0u8..3, 0u16..500).prop_map(|(cpu, order, mt, dt)| Op::Alloc { cpu, order, mt, dt }),
        5 => (0u32..4, any::<u16>(), 0u16..500).prop_map(|(cpu, pick, dt)| Op::Free { cpu, pick, dt }),
        1 => (0u32..4).prop_map(|cpu| Op::Drain { cpu }),
    ]
}

/// Every list walked, every block checked against the reference set of allocated blocks.
fn check(pa: &PageAlloc, live: &BTreeMap<u64, u8>) -> Result<(), TestCaseError> {
    for z in &pa.zones {
        let n = z.pages.len();
        let mut owner = vec![0u8; n]; // 0 unseen, 1 buddy, 2 pcp, 3 allocated
        let mark = |i: u32, order: u8, what: u8, owner: &mut Vec<u8>| -> Result<(), TestCaseError> {
            prop_assert_eq!(i % (1 << order), 0, "block {} of order {} misaligned", i, order);
            for k in i..i + (1 << order) {
                prop_assert_eq!(owner[k as usize], 0, "page {} is in two places", k);
                owner[k as usize] = what;
            }
            Ok(())
        };
        let mut buddy_pages = 0;
        for (o, fa) in z.free_area.iter().enumerate() {
            let mut blocks = 0;
            for (mt, l) in fa.free_list.iter().enumerate() {
                let (mut i, mut prev, mut len) = (l.first, NIL, 0);
                while i != NIL {
                    let p = z.pages.get(i);
                    prop_assert_eq!(p.prev, prev);
                    prop_assert_eq!((p.state, p.order, p.mt as usize), (PageState::Buddy, o as u8, mt));
                    mark(i, o as u8, 1, &mut owner)?;
                    // Merging is complete: a free block's buddy is never free at the same order.
                    if o < MAX_ORDER as usize - 1 {
                        let b = i ^ (1 << o);
                        prop_assert!(
                            !z.is_buddy(b, o as u8),
                            "buddies {} and {} of order {} both free",
                            i,
                            b,
                            o
                        );
                    }
                    prev = i;
                    i = p.next;
                    len += 1;
                }
                prop_assert_eq!(l.last, prev);
                prop_assert_eq!(l.len, len);
                blocks += len as u64;
                buddy_pages += (len as u64) << o;
            }
            prop_assert_eq!(fa.nr_free, blocks);
        }
        prop_assert_eq!(z.nr_free, buddy_pages);
        for (cpu, pcp) in z.pcp.iter().enumerate() {
            let mut pages = 0;
            for (pindex, l) in pcp.lists.iter().enumerate() {
                let order = pa.cfg.pcp_lists.order_of(pindex);
                let mut i = l.first;
                while i != NIL {
                    let p = z.pages.get(i);
                    prop_assert_eq!(
                        (p.state, p.order),
                        (PageState::Pcp, order),
                        "cpu {} list {}",
                        cpu,
                        pindex
                    );
                    mark(i, order, 2, &mut owner)?;
                    pages += 1u64 << order;
                    i = p.next;
                }
            }
            prop_assert_eq!(pcp.count, pages, "cpu {} count", cpu);
        }
        for (&pfn, &order) in live.range(z.start_pfn..z.start_pfn + n as u64) {
            let i = (pfn - z.start_pfn) as u32;
            prop_assert_eq!((z.pages.get(i).state, z.pages.get(i).order), (PageState::Allocated, order));
            mark(i, order, 3, &mut owner)?;
        }
        prop_assert!(owner.iter().all(|&o| o != 0), "a page is nowhere");
    }
    Ok(())
}

/// Runs `ops`, checking after each; returns everything observable.
fn run(cfg: PageAllocConfig, ops: &[Op]) -> Result<(Vec<String>, PageAllocStats), TestCaseError> {
    let env = Env { topo: &TOPO, lines: &LINES };
    let mut pa = PageAlloc::new(cfg, PAGE_ALLOC, &TOPO, NODE_PAGES);
    let mut live: BTreeMap<u64, u8> = BTreeMap::new();
    let mut now = [Ps::ZERO; 4];
    let mut clock = Ps::ZERO;
    let mut trace = Vec::new();
    for op in ops {
        match *op {
            Op::Alloc { cpu, order, mt, dt } => {
                clock = clock.max(now[cpu as usize]) + Ps(dt as u64 * 1_000);
                let a = pa.alloc_pages(cpu, clock, order, MigrateType::from_index(mt as usize), env);
                prop_assert!(a.done >= clock);
                if let Some(pfn) = a.pfn {
                    // Never handed out twice: no overlap with any live block.
                    let end = pfn + (1 << order);
                    if let Some((&p, &o)) = live.range(..end).next_back() {
                        prop_assert!(
                            p + (1 << o) <= pfn,
                            "block {} order {} overlaps live {} order {}",
                            pfn,
                            order,
                            p,
                            o
                        );
                    }
                    live.insert(pfn, order);
                }
                now[cpu as usize] = a.done;
                trace.push(format!("{a:?}"));
            }
            Op::Free { cpu, pick, dt } => {
                if live.is_empty() {
                    continue;
                }
                let (&pfn, &order) = live.iter().nth(pick as usize % live.len()).unwrap();
                live.remove(&pfn);
                clock = clock.max(now[cpu as usize]) + Ps(dt as u64 * 1_000);
                let f = pa
                    .free_pages(cpu, clock, pfn, order, env)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(f.done >= clock);
                // A second free of the same block is refused.
                prop_assert!(pa.free_pages(cpu, clock, pfn, order, env).is_err());
                now[cpu as usize] = f.done;
                trace.push(format!("{f:?}"));
            }
            Op::Drain { cpu } => {
                clock = clock.max(now[cpu as usize]);
                now[cpu as usize] = pa.drain_local_pages(cpu, clock, env);
            }
        }
        check(&pa, &live)?;
    }
    // Free everything and drain: the zones are whole again.
    for (pfn, order) in std::mem::take(&mut live) {
        clock += Ps(1);
        pa.free_pages(0, clock, pfn, order, env).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    for cpu in 0..4 {
        clock = pa.drain_local_pages(cpu, clock, env);
    }
    check(&pa, &live)?;
    for z in &pa.zones {
        prop_assert_eq!(z.free_area[MAX_ORDER as usize - 1].nr_free, NODE_PAGES >> (MAX_ORDER - 1));
    }
    Ok((trace, pa.stats.clone()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn lists_match_the_reference_in_every_era(ops in proptest::collection::vec(op(), 1..300)) {
        for cfg in [
            PageAllocConfig::v4_9(),
            PageAllocConfig::v4_9_hopcpu(),
            PageAllocConfig::v5_14(),
            PageAllocConfig::v6_7(),
        ] {
            let a = run(cfg, &ops)?;
            let b = run(cfg, &ops)?;
            prop_assert_eq!(a, b, "not deterministic");
        }
    }
}
