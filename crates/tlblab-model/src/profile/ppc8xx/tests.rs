use super::*;
use crate::hw::ppc8xx::cache::Cache;
use crate::hw::ppc8xx::tlb::{Mmu8xx, Side};
use crate::linux::arch::ppc::kernel::head_8xx::{
    self, pte, Cpu8xx, Head8xxConfig, PageTables8xx, PinConfig, Version, KERNELBASE,
};

/// The shipped profile's text.
fn text() -> &'static str {
    crate::builtin::profile("mpc855t")
}

fn shipped() -> Ppc8xxSections {
    Ppc8xxSections::parse("profiles/mpc855t.toml", text()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn shipped_sections_parse_and_extend_the_v1_profile() {
    let s = shipped();
    // A hardware-walk profile has no use for them, and a software one cannot do without them.
    let x86: crate::profile::MachineProfile =
        toml::from_str(crate::builtin::profile("haswell-ep-2s")).unwrap();
    assert!(x86.ppc8xx().is_none() && x86.validate().is_ok());
    let e =
        Ppc8xxSections::parse("p.toml", &text().replace("\n[head_8xx]\n", "\n[head_8xx_]\n")).unwrap_err();
    assert!(e.to_string().contains("unknown field `head_8xx_`"), "{e}");
    let cut = &text()[..text().find("\n[head_8xx]\n").unwrap()];
    let e = Ppc8xxSections::parse("p.toml", cut).unwrap_err().to_string();
    assert!(e.contains("p.toml: key `head_8xx`: is required with walk.kind = \"software\""), "{e}");
    assert_eq!(s.icache().sets(), 128);
    assert_eq!(s.dcache().size_bytes, 4096);
    assert_eq!(s.dcache_write_policy(), WritePolicy::WriteThrough);
    Cache::new(s.icache()).unwrap();
    Cache::new(s.dcache()).unwrap();
}

/// What one reload costs on the shipped numbers, per version: cold (handler text and tables not
/// cached) and warm (handler cached, table entries cached), user and kernel addresses. Printed for
/// docs/seed-003-model.md; asserted only in order.
#[test]
fn reload_cost_per_version_on_the_shipped_numbers() {
    let s = shipped();
    let mut rows = vec![];
    for v in [Version::V2_4, Version::V2_6] {
        let cfg = Head8xxConfig {
            version: v,
            cpu6: false,
            linear_8m: false,
            dcache_policy: s.dcache_write_policy(),
            costs: s.handler_costs().unwrap(),
        };
        let mut t = PageTables8xx::new(0x0100_0000);
        let swapper = t.new_pgd();
        let user = t.new_pgd();
        t.map_range(swapper, KERNELBASE, 0, 4 << 20, pte::KERNEL | pte::EXEC);
        t.map_range(user, 0x1000_0000, 0x0200_0000, 64 * 4096, pte::USER_RX);
        let mut mmu = Mmu8xx::new();
        head_8xx::boot(
            &mut mmu,
            &PinConfig { pin_tlb: false, lose_pinned: false, lost_at: 0, immr: 0xff00_0000 },
        );
        let (mut ic, mut dc) = (Cache::new(s.icache()).unwrap(), Cache::new(s.dcache()).unwrap());
        let mut cpu = Cpu8xx {
            mmu: &mut mmu,
            icache: &mut ic,
            dcache: &mut dc,
            tables: &mut t,
            user_pgd: user,
            swapper_pgd: swapper,
        };
        let mut miss = |ea: u32| {
            head_8xx::translate(&cfg, &mut cpu, Side::Instruction, ea, false).unwrap().unwrap().cycles
        };
        let cold_user = miss(0x1000_0000);
        let warm_user = miss(0x1000_1000); // next page: handler cached, PTE in the same D-cache line
        let cold_kernel = miss(KERNELBASE + 0x20_0000);
        let warm_kernel = miss(KERNELBASE + 0x20_1000);
        rows.push((v, cold_user, warm_user, cold_kernel, warm_kernel));
    }
    for r in &rows {
        eprintln!(
            "{:?}: ITLB reload cycles cold user {} warm user {} cold(ish) kernel {} warm kernel {}",
            r.0, r.1, r.2, r.3, r.4
        );
    }
    assert!(rows[1].2 > rows[0].2, "2.6's ACCESSED store makes its warm miss dearer");
    assert!(rows[0].1 > rows[0].2, "cold misses pay I-cache and D-cache fills");
}

#[test]
fn bad_sections_name_the_key_and_the_allowed_values() {
    let cases = [
        (
            text().replace("dcache_write_policy = \"write-through\"", "dcache_write_policy = \"wb\""),
            "caches.dcache_write_policy = \"wb\": allowed values are [\"copyback\", \"write-through\"]",
        ),
        (
            text().replace(
                "name = \"I-cache\"\nserves = \"instruction\"",
                "name = \"I-cache\"\nserves = \"data\"",
            ),
            "need exactly one cache with serves = \"instruction\", found 0",
        ),
        (
            text().replace("[tlb]\nreplacement = \"counter\"", "[tlb]\nreplacement = \"lru\""),
            "tlb.replacement = \"lru\": a software-loaded MPC8xx TLB replaces by its decrementing counter; allowed values are [\"counter\"]",
        ),
        (
            text().replace("alu_cycles = { value = 1,", "alu_cycles = { value = 1.5,"),
            "head_8xx.alu_cycles = 1.5: must be a whole number",
        ),
        (
            text().replace("miss_cycles = { value = 9,", "miss_cycles = { value = 20,"),
            "cache I-cache: latencies must satisfy",
        ),
        (text().replace("[mmu8xx]\n", "[mmu8xx]\nclock = 1\n"), "unknown field `clock`"),
    ];
    for (text, want) in cases {
        let e = Ppc8xxSections::parse("p.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with("p.toml: "), "{e}");
        assert!(e.contains(want), "{e:?} should contain {want:?}");
    }
}
