use super::*;

fn l24() -> &'static str {
    crate::builtin::layout("linux-2.4-dd")
}
fn l26() -> &'static str {
    crate::builtin::layout("linux-2.6-dd")
}

fn load(name: &str, text: &str) -> TextLayout {
    TextLayout::parse(name, text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn shipped_layouts_parse_and_their_paths_reach_the_dumped_pages() {
    for (name, text) in [("linux-2.4-dd.toml", l24()), ("linux-2.6-dd.toml", l26())] {
        let l = load(name, text);
        assert_eq!(l.dumps().len(), 1);
        let c = l.check(&l.dumps()[0]);
        assert!(c.missing().is_empty(), "{name}: dumped pages not on the modelled path: {:x?}", c.missing());
        for p in ["sys_read", "sys_write", "writeback", "timer_tick", "dd_read_user", "dd_write_user"] {
            assert!(l.path(p).is_some(), "{name}: path {p}");
        }
    }
}

#[test]
fn v26_read_path_is_exactly_the_dump_and_v24_dump_is_a_subset() {
    let l = load("26", l26());
    let c = l.check(&l.dumps()[0]);
    assert_eq!(c.modelled_kernel, c.dumped_kernel);
    assert_eq!(c.modelled_kernel.len(), 10);
    assert_eq!(c.modelled_user, c.dumped_user);
    assert_eq!(c.modelled_user.len(), 3);
    let l = load("24", l24());
    let c = l.check(&l.dumps()[0]);
    assert_eq!(c.dumped_kernel.len(), 4);
    assert!(c.dumped_kernel.is_subset(&c.modelled_kernel));
    assert!(c.modelled_kernel.len() > 4);
}

/// The number the seed argues about: distinct text pages of one dd iteration (user loop, read,
/// write) against the 32-entry I-TLB. Printed so the plan can quote it; asserted only in its
/// direction (2.6 needs more pages than 2.4): whether 2.6 overflows the TLB is for the
/// simulation to show, not for this estimate to be tuned to.
#[test]
fn one_iteration_footprint_by_version() {
    let iter = ["dd_read_user", "sys_read", "dd_write_user", "sys_write"];
    let f24 = load("24", l24()).footprint(iter).unwrap();
    let f26 = load("26", l26()).footprint(iter).unwrap();
    let n24 = f24.kernel_pages.len() + f24.user_pages.len();
    let n26 = f26.kernel_pages.len() + f26.user_pages.len();
    eprintln!(
        "pages per iteration: 2.4 {} kernel + {} user = {n24}; 2.6 {} kernel + {} user = {n26}; lines 2.4 {} 2.6 {}",
        f24.kernel_pages.len(),
        f24.user_pages.len(),
        f26.kernel_pages.len(),
        f26.user_pages.len(),
        f24.lines,
        f26.lines
    );
    assert!(n26 > n24);
    for (v, text) in [("2.4", l24()), ("2.6", l26())] {
        let l = load(v, text);
        let it = l.footprint(iter).unwrap();
        let all = l.footprint(iter.into_iter().chain(["writeback", "timer_tick"])).unwrap();
        let tick = l.footprint(["timer_tick"]).unwrap();
        eprintln!(
            "{v}: timer tick {} kernel pages; iteration + writeback + tick = {} pages ({} beyond the iteration)",
            tick.kernel_pages.len(),
            all.kernel_pages.len() + all.user_pages.len(),
            all.kernel_pages.len() + all.user_pages.len() - it.kernel_pages.len() - it.user_pages.len()
        );
    }
}

const MINI: &str = r#"
schema_version = 1
name = "mini"
kernel = "2.6"
description = "test"
size_rule = "test"

[[function]]
name = "a"
file = "a.c"
addr = 0xc0000ff0
size = 0x20
space = "kernel"
confidence = "source"

[[function]]
name = "u"
file = "u.c"
addr = 0x10000000
size = 0x10
space = "user"
confidence = "link-order-estimate"

[[path]]
name = "p"
steps = ["u", "a", "a"]

[[dump]]
paths = ["p"]
source = "test"
kernel_pages = [0xc0000000, 0xc0001000]
user_pages = [0x10000000]
"#;

#[test]
fn a_function_across_a_page_boundary_touches_both_pages() {
    let l = load("mini", MINI);
    let fp = l.footprint(["p"]).unwrap();
    assert_eq!(fp.kernel_pages, vec![0xc000_0000, 0xc000_1000]);
    assert_eq!(fp.user_pages, vec![0x1000_0000]);
    assert_eq!(fp.lines, 3);
    assert_eq!(fp.bytes, 0x50);
    assert!(l.check(&l.dumps()[0]).missing().is_empty());
    assert!(l.footprint(["nope"]).is_none());
}

#[test]
fn errors_name_the_file_the_key_and_the_allowed_values() {
    let cases = [
        (MINI.replace("space = \"user\"", "space = \"usr\""), "function[1] (u).space = \"usr\": allowed values are [\"kernel\", \"user\"]"),
        (MINI.replace("confidence = \"source\"", "confidence = \"sure\""), "function[0] (a).confidence = \"sure\""),
        (MINI.replace("steps = [\"u\", \"a\", \"a\"]", "steps = [\"u\", \"b\"]"), "path[0] (p).steps: unknown function \"b\""),
        (MINI.replace("paths = [\"p\"]", "paths = [\"q\"]"), "dump[0].paths: \"q\" is not a path; allowed values are [\"p\"]"),
        (MINI.replace("addr = 0x10000000", "addr = 0xc0001000"), "kernel text lies at or above"),
        (
            MINI.replace("addr = 0x10000000\nsize = 0x10\nspace = \"user\"", "addr = 0xc0001008\nsize = 0x10\nspace = \"kernel\""),
            "function a [0xc0000ff0, 0xc0001010) overlaps u at 0xc0001008",
        ),
        (MINI.replace("size = 0x10", "size = 0x0"), "multiples of 4"),
        (MINI.replace("schema_version = 1", "schema_version = 2"), "schema_version = 2"),
        (MINI.replace("size_rule = \"test\"", "size_rule = \"test\"\ncolour = 1"), "unknown field `colour`"),
        (format!("{MINI}\n[[function]]\nname = \"a\"\nfile = \"x\"\naddr = 0xc0100000\nsize = 4\nspace = \"kernel\"\nconfidence = \"source\"\n"), "defined twice"),
    ];
    for (text, want) in cases {
        let e = TextLayout::parse("layouts/x.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with("layouts/x.toml: "), "{e}");
        assert!(e.contains(want), "{e:?} should contain {want:?}");
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
}

/// The layouts replayed through the 8xx pieces without the engine, on the shipped
/// `profiles/mpc855t.toml` numbers: every 16-byte line of every
/// function of dd's iteration is fetched through the ITLB (a miss runs the version's
/// `InstructionTLBMiss` against the caches) and the I-cache, with writeback every 8th iteration
/// and a timer tick every 10th (2.4, HZ=100) or every iteration (2.6, HZ=1000) — both rates are
/// assumptions for this check, not the workload. Prints ITLB misses per iteration (user/kernel)
/// and handler clocks; asserts only what the mechanism must give: 2.6 unpinned misses far more
/// than 2.4, and the pinned 8 MB entry brings 2.6 back to (near) 2.4.
#[test]
fn replaying_the_layouts_through_the_itlb_separates_the_versions() {
    use crate::hw::ppc8xx::cache::Cache;
    use crate::hw::ppc8xx::tlb::{Mmu8xx, Side};
    use crate::linux::arch::ppc::kernel::head_8xx::{
        self, pte, Cpu8xx, Head8xxConfig, PageTables8xx, PinConfig, Version, KERNELBASE,
    };

    let prof = crate::profile::ppc8xx::Ppc8xxSections::parse(
        "profiles/mpc855t.toml",
        crate::builtin::profile("mpc855t"),
    )
    .unwrap();
    let costs = prof.handler_costs().unwrap();
    let run = |version: Version, text: &str, hz_every: u32, pin: bool, lose: bool| -> (f64, f64, f64) {
        let l = load("replay", text);
        let cfg = Head8xxConfig {
            version,
            cpu6: false,
            linear_8m: false,
            dcache_policy: prof.dcache_write_policy(),
            costs,
        };
        let mut t = PageTables8xx::new(0x0100_0000);
        let swapper = t.new_pgd();
        let user = t.new_pgd();
        t.map_range(swapper, KERNELBASE, 0, 2 << 20, pte::KERNEL | pte::EXEC);
        for f in l.functions().iter().filter(|f| !f.is_kernel()) {
            let p = (f.addr as u32) & !0xfff;
            t.map(user, p, 0x0300_0000 + (p & 0x00ff_f000), pte::USER_RX);
        }
        let mut mmu = Mmu8xx::new();
        head_8xx::boot(
            &mut mmu,
            &PinConfig { pin_tlb: pin, lose_pinned: lose, lost_at: 0x3000, immr: 0xff00_0000 },
        );
        let (mut ic, mut dc) = (Cache::new(prof.icache()).unwrap(), Cache::new(prof.dcache()).unwrap());
        let mut cpu = Cpu8xx {
            mmu: &mut mmu,
            icache: &mut ic,
            dcache: &mut dc,
            tables: &mut t,
            user_pgd: user,
            swapper_pgd: swapper,
        };
        let (mut user_miss, mut kernel_miss, mut cycles) = (0u64, 0u64, 0u64);
        let iters = 400u32;
        for i in 0..iters {
            let mut paths = vec!["dd_read_user", "sys_read", "dd_write_user", "sys_write"];
            if i % 8 == 7 {
                paths.push("writeback");
            }
            if i % hz_every == 0 {
                paths.push("timer_tick");
            }
            for p in paths {
                for f in l.steps(p).unwrap() {
                    for line in (f.addr & !15..f.end()).step_by(16) {
                        if let Some(ev) =
                            head_8xx::translate(&cfg, &mut cpu, Side::Instruction, line as u32, false)
                                .unwrap()
                        {
                            // Warm-up: count from the second half only.
                            if i >= iters / 2 {
                                if ev.kernel {
                                    kernel_miss += 1;
                                } else {
                                    user_miss += 1;
                                }
                                cycles += ev.cycles;
                            }
                        }
                        cpu.icache.read(line & 0x0fff_ffff);
                    }
                }
            }
        }
        let n = (iters / 2) as f64;
        (user_miss as f64 / n, kernel_miss as f64 / n, cycles as f64 / n)
    };
    let r24 = run(Version::V2_4, l24(), 10, false, false);
    let r26 = run(Version::V2_6, l26(), 1, false, false);
    let r26p = run(Version::V2_6, l26(), 1, true, false);
    let r26l = run(Version::V2_6, l26(), 1, true, true);
    for (name, r) in [("2.4", r24), ("2.6", r26), ("2.6 pinned", r26p), ("2.6 pin lost", r26l)] {
        eprintln!(
            "{name}: ITLB misses per iteration user {:.2} kernel {:.2}; handler clocks per iteration {:.0}",
            r.0, r.1, r.2
        );
    }
    let total = |r: (f64, f64, f64)| r.0 + r.1;
    assert!(total(r26) > 5.0 * total(r24).max(1.0), "2.6 unpinned must thrash: {r26:?} vs {r24:?}");
    assert!(total(r26p) <= total(r24) + 1.0, "pinning brings 2.6 to 2.4: {r26p:?} vs {r24:?}");
    // A lost pin is the unpinned case, slightly worse: RSV4I stays set, so the counter has only 28
    // slots left.
    assert!(total(r26l) >= total(r26), "{r26l:?} vs {r26:?}");
}

#[test]
fn fget_light_beside_sys_write_takes_a_page_off_both_system_calls() {
    let l = load("26", l26());
    let moved = l.moved_beside("fget_light", "sys_write").unwrap();
    let f = moved.function("fget_light").unwrap();
    let w = moved.function("sys_write").unwrap();
    assert_eq!(f.addr & !0xfff, w.addr & !0xfff, "on sys_write's page");
    assert!(f.addr >= w.end() && f.size == l.function("fget_light").unwrap().size);
    for p in ["sys_read", "sys_write"] {
        let (before, after) = (l.footprint([p]).unwrap(), moved.footprint([p]).unwrap());
        assert_eq!(after.kernel_pages.len() + 1, before.kernel_pages.len(), "{p}");
        assert_eq!(after.bytes, before.bytes, "{p}: moved, not resized");
        assert!(!after.kernel_pages.contains(&0xc004_b000), "{p}");
    }
    // Unknown names and a full page are one-line errors.
    assert!(l.moved_beside("nope", "sys_write").unwrap_err().0.contains("no function \"nope\""));
    let big = l.function("generic_file_buffered_write").map(|f| f.name.clone());
    if let Some(big) = big {
        // A function cannot be moved onto a page it does not fit on: fill the rest of
        // sys_write's page by moving functions there until one does not fit.
        let mut cur = l.clone();
        let mut refused = false;
        for name in [big.as_str(), "vfs_write", "vfs_read", "__clear_user", "read_zero", "ext2_new_block"] {
            match cur.moved_beside(name, "sys_write") {
                Ok(n) => cur = n,
                Err(e) => {
                    assert!(e.0.contains("no room") && !e.0.contains('\n'), "{e}");
                    refused = true;
                    break;
                }
            }
        }
        assert!(refused, "sys_write's page never filled up");
    }
}
