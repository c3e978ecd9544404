use super::*;
use crate::hw::ppc8xx::cache::{Cache, CacheSpec};

const USER_TEXT: u32 = 0x1000_0000;
const USER_DATA: u32 = 0x1002_0000;
const KTEXT: u32 = KERNELBASE + 0x9c000;

fn cache(name: &str) -> Cache {
    Cache::new(CacheSpec {
        name: name.into(),
        size_bytes: 4096,
        line_bytes: 16,
        ways: 2,
        hit_cycles: 1,
        miss_cycles: 8,
        fill_cycles: 10,
        writeback_cycles: 9,
        write_through_cycles: 2,
    })
    .unwrap()
}

fn cfg(version: Version) -> Head8xxConfig {
    Head8xxConfig {
        version,
        cpu6: false,
        linear_8m: false,
        dcache_policy: WritePolicy::CopyBack,
        costs: HandlerCosts {
            exception_entry_cycles: 10,
            rfi_cycles: 10,
            alu_cycles: 1,
            mfspr_cycles: 2,
            mtspr_cycles: 2,
            taken_branch_cycles: 1,
        },
    }
}

struct Machine {
    mmu: Mmu8xx,
    i: Cache,
    d: Cache,
    t: PageTables8xx,
    user: u32,
    swapper: u32,
}

impl Machine {
    fn new() -> Machine {
        let mut t = PageTables8xx::new(0x0100_0000);
        let swapper = t.new_pgd();
        let user = t.new_pgd();
        // 16 MB of lowmem mapped with 4 KB kernel PTEs (mapin_ram).
        t.map_range(swapper, KERNELBASE, 0, 16 << 20, pte::KERNEL | pte::EXEC);
        t.map_range(user, USER_TEXT, 0x0200_0000, 16 * 4096, pte::USER_RX);
        t.map_range(user, USER_DATA, 0x0300_0000, 16 * 4096, pte::USER_RW);
        Machine { mmu: Mmu8xx::new(), i: cache("I"), d: cache("D"), t, user, swapper }
    }

    fn cpu(&mut self) -> Cpu8xx<'_> {
        Cpu8xx {
            mmu: &mut self.mmu,
            icache: &mut self.i,
            dcache: &mut self.d,
            tables: &mut self.t,
            user_pgd: self.user,
            swapper_pgd: self.swapper,
        }
    }
}

#[test]
fn instruction_counts_follow_the_sources() {
    // (version, handler) -> (user path, kernel path), counted in head_8xx.S without CPU6.
    let want = [
        (Version::V2_4, Handler::InstructionTlbMiss, 26, 29),
        (Version::V2_4, Handler::DataTlbMiss, 25, 28),
        (Version::V2_4, Handler::DataTlbError, 31, 34),
        (Version::V2_6, Handler::InstructionTlbMiss, 27, 30),
        (Version::V2_6, Handler::DataTlbMiss, 27, 30),
        (Version::V2_6, Handler::DataTlbError, 36, 39),
    ];
    for (v, h, user, kernel) in want {
        assert_eq!(path(v, h, false, false).count(), user, "{v:?} {h:?} user");
        assert_eq!(path(v, h, false, true).count(), kernel, "{v:?} {h:?} kernel");
        // The last instruction is rfi, and every handler loads L1 and the PTE exactly once.
        let ops: Vec<Op> = path(v, h, false, true).map(|(_, x)| x.op).collect();
        assert_eq!(ops.last(), Some(&Op::Rfi));
        assert_eq!(ops.iter().filter(|o| **o == Op::LoadL1).count(), 1);
        assert_eq!(ops.iter().filter(|o| **o == Op::LoadPte).count(), 1);
        // 2.6 stores ACCESSED in both miss handlers; 2.4.0 in neither; both error handlers store.
        let stores = ops.iter().filter(|o| **o == Op::StorePte).count();
        let want_stores = usize::from(v == Version::V2_6 || h == Handler::DataTlbError);
        assert_eq!(stores, want_stores, "{v:?} {h:?}");
    }
}

#[test]
fn text_addresses_start_at_the_vector_and_cpu6_shifts_them() {
    let a: Vec<u32> =
        path(Version::V2_6, Handler::InstructionTlbMiss, false, false).map(|(a, _)| a).collect();
    assert_eq!(a[0], 0x1100);
    // User path skips the three swapper instructions, whose addresses stay reserved.
    let k: Vec<u32> = path(Version::V2_6, Handler::InstructionTlbMiss, false, true).map(|(a, _)| a).collect();
    assert_eq!(*k.last().unwrap(), 0x1100 + 4 * 29);
    assert_eq!(*a.last().unwrap(), *k.last().unwrap());
    let c: Vec<u32> = path(Version::V2_6, Handler::InstructionTlbMiss, true, true).map(|(a, _)| a).collect();
    assert_eq!(c.len(), 47);
    assert_eq!(*c.last().unwrap(), 0x1100 + 4 * 46);
}

#[test]
fn an_itlb_miss_walks_the_tables_and_loads_the_entry() {
    for v in [Version::V2_4, Version::V2_6] {
        let mut m = Machine::new();
        let c = cfg(v);
        let ev = translate(&c, &mut m.cpu(), Side::Instruction, USER_TEXT + 0x10, false).unwrap().unwrap();
        assert_eq!(ev.handler, Handler::InstructionTlbMiss);
        assert!(!ev.kernel);
        assert!(matches!(ev.result, Reload::Loaded { slot: 0 }));
        // Cold: every instruction line and the two table loads and scratch lines miss.
        assert!(ev.icache_misses >= 6, "{ev:?}");
        assert!(ev.dcache_misses >= 3, "{ev:?}");
        assert!(translate(&c, &mut m.cpu(), Side::Instruction, USER_TEXT + 0x20, false).unwrap().is_none());
        let pte = m.t.pte(m.user, USER_TEXT);
        assert!(pte & pte::ACCESSED != 0, "USER_RX is mapped with ACCESSED already");
        // Warm: a second page misses the TLB but the handler's text and scratch are cached.
        let warm =
            translate(&c, &mut m.cpu(), Side::Instruction, USER_TEXT + 0x1000, false).unwrap().unwrap();
        assert_eq!(warm.icache_misses, 0);
        assert!(warm.cycles < ev.cycles);
        assert_eq!(m.mmu.itlb.stats().misses, 2);
    }
}

#[test]
fn v26_stores_accessed_and_costs_more_than_v24_for_the_same_miss() {
    let mut costs = vec![];
    for v in [Version::V2_4, Version::V2_6] {
        let mut m = Machine::new();
        let c = cfg(v);
        let ea = USER_DATA + 0x3000;
        let a = PageTables8xx::pte_addr(m.t.read(PageTables8xx::l1_addr(m.user, ea)), ea);
        m.t.write(a, m.t.read(a) & !pte::ACCESSED);
        // Warm the handler first on another page.
        translate(&c, &mut m.cpu(), Side::Data, USER_DATA, false).unwrap();
        let ev = translate(&c, &mut m.cpu(), Side::Data, ea, false).unwrap().unwrap();
        assert_eq!(ev.pte_stores, u32::from(v == Version::V2_6));
        assert_eq!(m.t.pte(m.user, ea) & pte::ACCESSED != 0, v == Version::V2_6);
        costs.push(ev.cycles);
    }
    assert!(costs[1] > costs[0], "{costs:?}");
}

#[test]
fn kernel_addresses_use_swapper_pg_dir_and_shared_entries() {
    let mut m = Machine::new();
    m.mmu.casid = 3;
    let c = cfg(Version::V2_6);
    let ev = translate(&c, &mut m.cpu(), Side::Instruction, KTEXT, false).unwrap().unwrap();
    assert!(ev.kernel);
    assert_eq!(ev.instructions, 30);
    let slot = m.mmu.itlb.probe(KTEXT, 7).expect("kernel entry is shared: matches any ASID");
    assert!(m.mmu.itlb.slot(slot).unwrap().shared);
    assert_eq!(m.mmu.itlb.slot(slot).unwrap().rpn, 0x9c000);
}

#[test]
fn the_pinned_8mb_entry_removes_kernel_text_misses_until_a_tlbie_takes_it() {
    let pin = PinConfig { pin_tlb: true, lose_pinned: false, lost_at: 0x3000, immr: 0xff00_0000 };
    let c = cfg(Version::V2_6);
    let mut m = Machine::new();
    boot(&mut m.mmu, &pin);
    assert_eq!(m.mmu.itlb.valid_count(), 1);
    // DTLB 28 (kernel 8 MB) and 29 (IMMR); 30/31 were written with V clear (2.6.12-rc2).
    assert_eq!(m.mmu.dtlb.valid_count(), 2);
    assert!(m.mmu.dtlb.probe(KERNELBASE + (8 << 20), 0).is_none());
    assert!(m.mmu.dtlb.reserve4());
    for p in 0..64 {
        assert!(translate(&c, &mut m.cpu(), Side::Instruction, KERNELBASE + p * 4096, false)
            .unwrap()
            .is_none());
    }
    // 29 user pages cycle through 28 usable entries: every access misses, the pin stays.
    for _ in 0..3 {
        for p in 0..29 {
            m.t.map(m.user, 0x2000_0000 + p * 4096, 0x0400_0000 + p * 4096, pte::USER_RX);
            translate(&c, &mut m.cpu(), Side::Instruction, 0x2000_0000 + p * 4096, false).unwrap();
        }
    }
    assert_eq!(m.mmu.itlb.stats().misses, 87);
    assert_eq!(m.mmu.itlb.probe(KERNELBASE, 0), Some(28));
    // The 2.6 bug: a tlbie inside the first 8 MB drops the pinned text entry for good.
    let mut m = Machine::new();
    boot(&mut m.mmu, &PinConfig { lose_pinned: true, ..pin });
    assert_eq!(m.mmu.itlb.valid_count(), 0);
    assert_eq!(m.mmu.dtlb.valid_count(), 1, "the DTLB 8 MB at KERNELBASE goes too; IMMR stays");
    let ev = translate(&c, &mut m.cpu(), Side::Instruction, KTEXT, false).unwrap().unwrap();
    assert!(ev.kernel);
    assert_eq!(m.mmu.itlb.slot(0).unwrap().size, PageSize8xx::Size4K);
}

#[test]
fn first_store_to_a_clean_user_page_takes_a_miss_and_a_tlb_error() {
    for v in [Version::V2_4, Version::V2_6] {
        let mut m = Machine::new();
        let c = cfg(v);
        let ev = translate(&c, &mut m.cpu(), Side::Data, USER_DATA + 8, true).unwrap().unwrap();
        assert_eq!(ev.handler, Handler::DataTlbMiss);
        let want = if v == Version::V2_4 { 25 + 31 } else { 27 + 36 };
        assert_eq!(ev.instructions, want);
        let p = m.t.pte(m.user, USER_DATA);
        assert_eq!(p & (pte::DIRTY | pte::HWWRITE), pte::DIRTY | pte::HWWRITE);
        assert_eq!(m.mmu.dtlb.stats().changed_faults, 1);
        assert_eq!(m.mmu.dtlb.valid_count(), 1, "the error reload rewrites the faulting entry");
        assert!(translate(&c, &mut m.cpu(), Side::Data, USER_DATA + 12, true).unwrap().is_none());
        // The next reload of that page carries HWWRITE: no error again.
        m.mmu.tlbia();
        let ev = translate(&c, &mut m.cpu(), Side::Data, USER_DATA, true).unwrap().unwrap();
        assert_eq!(ev.handler, Handler::DataTlbMiss);
        assert_eq!(m.mmu.dtlb.stats().changed_faults, 1);
    }
}

#[test]
fn unmapped_or_read_only_addresses_end_in_the_page_fault_path() {
    let mut m = Machine::new();
    let c = cfg(Version::V2_6);
    let ev = translate(&c, &mut m.cpu(), Side::Data, 0x3000_0000, false).unwrap().unwrap();
    assert_eq!(ev.result, Reload::PageFault);
    assert_eq!(m.mmu.dtlb.valid_count(), 0);
    // A store to user text (no RW): miss loads the entry, the error handler bails out.
    let ev = translate(&c, &mut m.cpu(), Side::Data, USER_TEXT, true).unwrap().unwrap();
    assert_eq!(ev.result, Reload::PageFault);
    assert_eq!(m.t.pte(m.user, USER_TEXT) & pte::DIRTY, 0);
    assert!(matches!(
        handle(&c, &mut m.cpu(), Handler::DataTlbError, 0x3000_0000),
        Err(Head8xxError::NoFaultingEntry(_))
    ));
}

#[test]
fn write_through_scratch_stores_pay_the_bus_every_miss() {
    let mut m = Machine::new();
    let mut c = cfg(Version::V2_4);
    translate(&c, &mut m.cpu(), Side::Data, USER_DATA, false).unwrap();
    let cb = translate(&c, &mut m.cpu(), Side::Data, USER_DATA + 0x1000, false).unwrap().unwrap();
    c.dcache_policy = WritePolicy::WriteThrough;
    let wt = translate(&c, &mut m.cpu(), Side::Data, USER_DATA + 0x2000, false).unwrap().unwrap();
    // Two scratch stores at write_through_cycles (2) instead of hit_cycles (1).
    assert_eq!(wt.cycles, cb.cycles + 2);
}

#[test]
fn versions_parse_by_name() {
    assert_eq!(Version::parse("2.4"), Some(Version::V2_4));
    assert_eq!(Version::parse(Version::V2_6.name()), Some(Version::V2_6));
    assert_eq!(Version::parse("2.5"), None);
}

#[test]
fn linear_8m_loads_8mb_entries_for_the_linear_map_without_a_walk() {
    let mut c = cfg(Version::V2_6);
    c.linear_8m = true;
    let mut m = Machine::new();
    m.mmu.casid = 3;
    // Kernel text in the first 8 MB: ITLBMissLinear, 21 instructions, no data access at all.
    let ev = translate(&c, &mut m.cpu(), Side::Instruction, KTEXT, false).unwrap().unwrap();
    assert!(ev.kernel);
    assert_eq!(ev.instructions, 21);
    assert_eq!((ev.dcache_misses, ev.pte_stores), (0, 0));
    assert_eq!(m.d.stats().reads + m.d.stats().writes, 0, "no table walk, no scratch in memory");
    let slot = m.mmu.itlb.probe(KTEXT, 7).expect("a shared entry");
    let e = *m.mmu.itlb.slot(slot).unwrap();
    assert_eq!((e.size, e.epn, e.rpn), (PageSize8xx::Size8M, KERNELBASE, 0));
    // The same entry serves all of the first 8 MB; text above it takes the 4 KB walk.
    assert!(translate(&c, &mut m.cpu(), Side::Instruction, KERNELBASE + 0x7f_f000, false).unwrap().is_none());
    let far = translate(&c, &mut m.cpu(), Side::Instruction, KERNELBASE + (9 << 20), false).unwrap().unwrap();
    assert_eq!(far.instructions, 30, "2.6.12-rc2's kernel walk");
    // Data: DTLBMissLinear, 26 instructions, over all of lowmem; the entry is dirty (no error on
    // a store) and maps EA - KERNELBASE.
    let ea = KERNELBASE + (12 << 20) + 0x345;
    let d = translate(&c, &mut m.cpu(), Side::Data, ea, true).unwrap().unwrap();
    assert_eq!((d.handler, d.instructions, d.pte_stores), (Handler::DataTlbMiss, 26, 0));
    assert_eq!(m.mmu.dtlb.hit(ea, 3, true), Some(ea - KERNELBASE));
    // User addresses keep the version's walk.
    let u = translate(&c, &mut m.cpu(), Side::Instruction, USER_TEXT, false).unwrap().unwrap();
    assert_eq!(u.instructions, 27);
}

#[test]
fn a_cold_linear_reload_costs_less_than_the_walk_it_replaces() {
    // Cold caches: the walk pays D-cache misses for its scratch stores, the level-1 entry and
    // the PTE; the linear path touches no data. Warm, the two cost about the same (26 against
    // 30 instructions, more of them SPR moves): the gain is in entries covering 8 MB.
    let miss = |linear: bool| {
        let mut c = cfg(Version::V2_6);
        c.linear_8m = linear;
        let mut m = Machine::new();
        translate(&c, &mut m.cpu(), Side::Data, KERNELBASE + (9 << 20), false).unwrap().unwrap()
    };
    let (walk, linear) = (miss(false), miss(true));
    assert!(walk.dcache_misses >= 3 && linear.dcache_misses == 0, "{walk:?} {linear:?}");
    assert!(linear.cycles < walk.cycles, "linear {} against walk {}", linear.cycles, walk.cycles);
}
