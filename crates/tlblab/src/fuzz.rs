//! Fuzz targets: every parser of a file a user hands tlblab, as a function of the file's bytes.
//!
//! A target panics only on a bug: a panic anywhere (an index, an overflow in a debug build, an
//! `expect` on something validation let through) is a crash, and so is an error that is not the
//! one line naming the file that bad input must get. Anything else, a value or an error, is fine.
//!
//! `fuzz/` (a crate outside the workspace, built by `scripts/fuzz.sh` with libFuzzer's coverage
//! instrumentation) runs these under the fuzzer; `tests/fuzz_corpus.rs` replays the saved corpus
//! `fuzz/corpus/TARGET/` through them on every `cargo test`.

use std::fmt::Display;
use std::io::BufRead;

use tlblab_model::hw::coherence::LineCosts;
use tlblab_model::hw::ipi::IpiCosts;
use tlblab_model::hw::tlb::{
    AccessKind, Geometry, Inclusion, PageSize, Replacement, Serves, StructureSpec, TlbHierarchy,
};
use tlblab_model::linux::arch::ppc::data_layout::DataLayout;
use tlblab_model::linux::arch::ppc::kernel::head_8xx::Version;
use tlblab_model::linux::arch::ppc::mm::mmu_8xx;
use tlblab_model::linux::arch::ppc::system_map::TextLayout;
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::trace::TraceDriver;

use crate::trace::reader::{self, Format};

/// The name every target gives its input: errors must carry it.
pub const ORIGIN: &str = "fuzz-input.toml";

/// Every target by name, as `scripts/fuzz.sh` and the corpus replay know them.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("profile", profile),
    ("experiment", experiment),
    ("kernel", kernel),
    ("layout", layout),
    ("data-layout", data_layout),
    ("raw64", raw64),
    ("hex", hex),
    ("lackey", lackey),
    ("gzip", gzip),
    ("duration", duration),
    ("workload", workload),
    ("name", name),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// A rejection must be one non-empty line naming the input.
fn rejected(e: impl Display) {
    let s = format!("{e:#}");
    assert!(!s.trim().is_empty(), "an empty error");
    assert!(!s.contains('\n') && !s.contains('\r'), "an error of several lines: {s:?}");
    assert!(s.contains(ORIGIN), "an error not naming the input: {s:?}");
}

/// The input as the text a file reader would give (`read_to_string` refuses what is not UTF-8).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A machine profile: parsed, validated, and everything a run derives from it built.
pub fn profile(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::machines::parse(t, ORIGIN) {
        Err(e) => rejected(e),
        Ok(p) => {
            let tlb = p.build_tlb();
            for level in 1..=p.tlb_levels() {
                for kind in AccessKind::ALL {
                    assert!(p.level_hit_cycles(level, kind) >= 0.0);
                }
            }
            assert!(tlb.views(0).len() <= tlb.specs().len());
            let _ = (p.clock_mhz(), LineCosts::from_profile(&p), IpiCosts::from_profile(&p));
            let _ = tlblab_model::hw::topology::Topology::from_profile(&p.topology);
            let _ = (p.page_alloc().map_err(rejected_profile), p.slab().map_err(rejected_profile));
            if let Some(s) = p.ppc8xx() {
                s.validate().expect("a validated profile's 8xx sections validate");
            }
            // What a run prints about the machine, and what a cell file stores.
            serde_json::to_string(&p).expect("a profile serialises");
        }
    }
}

/// A missing section is the run's to report (the profile itself is fine); its error is the
/// run's one line.
fn rejected_profile(e: impl Display) {
    let s = e.to_string();
    assert!(!s.contains('\n'), "an error of several lines: {s:?}");
}

/// An experiment file: parsed and validated (its kernel columns resolved).
pub fn experiment(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::experiment::parse(t, ORIGIN) {
        Err(e) => rejected(e),
        Ok(e) => {
            // One cell per kernel column and row; the rows are the message sizes where the
            // experiment has them (seed-004's netperf / sockperf), else the thread counts.
            let rows = if e.sizes.is_empty() { e.threads.len() } else { e.sizes.len() };
            assert_eq!(crate::experiment::cell_count(&e), e.kernels.len() * rows);
        }
    }
}

/// A kernel preset file (it may inherit a built-in one).
pub fn kernel(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match KernelConfig::from_file_text("fuzz", ORIGIN, t) {
        Err(e) => rejected(e),
        Ok(k) => {
            let _ = format!("{:?}", k.knobs());
        }
    }
}

/// A text layout (`tlblab layout --layout FILE`): parsed, checked against both kernels' data
/// layouts, its paths' footprints, dumps and hot ordering.
pub fn layout(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match TextLayout::parse(ORIGIN, t) {
        Err(e) => rejected(e),
        Ok(l) => {
            for v in [Version::V2_4, Version::V2_6] {
                if let Err(e) = mmu_8xx::check_text(v, &l) {
                    assert!(!e.contains('\n'), "an error of several lines: {e:?}");
                }
            }
            let names: Vec<&str> = l.paths().iter().map(|p| p.name.as_str()).collect();
            let fp = l.footprint(names.iter().copied()).expect("the layout's own paths");
            for d in l.dumps() {
                let _ = l.check(d).missing();
            }
            let hot = l.hot_ordered(&names).expect("the layout's own paths");
            let after = hot.footprint(names.iter().copied()).expect("the same paths");
            assert_eq!(after.bytes, fp.bytes, "hot ordering moves text, it does not resize it");
            if let Err(e) = l.hot_ordered(&mmu_8xx::HOT_PATHS) {
                assert!(!e.to_string().contains('\n'), "an error of several lines: {e}");
            }
            if let Err(e) = l.moved_beside("fget_light", "sys_write") {
                assert!(!e.to_string().contains('\n'), "an error of several lines: {e}");
            }
        }
    }
}

/// A data layout, against the shipped 2.6 text layout.
pub fn data_layout(data: &[u8]) {
    let Some(t) = text(data) else { return };
    // Parsed once: a parse per input would be most of the target's time.
    static FUNCTIONS: std::sync::OnceLock<std::sync::Arc<TextLayout>> = std::sync::OnceLock::new();
    let functions = FUNCTIONS.get_or_init(|| mmu_8xx::builtin_layouts(Version::V2_6).0);
    match DataLayout::parse(ORIGIN, t, functions) {
        Err(e) => rejected(e),
        Ok(d) => {
            for o in d.objects() {
                for n in [0, 1, u64::MAX] {
                    let _ = o.address(n);
                }
            }
            for f in d.functions() {
                assert!(!d.accesses(f).is_empty());
            }
        }
    }
}

/// The TLB a trace runs through: 4K pages, a 4-entry level 1 over a 16-entry level 2.
fn driver() -> TraceDriver {
    let spec = |level: u8, sets, ways| StructureSpec {
        name: format!("L{level}"),
        level,
        serves: Serves::Unified,
        page_sizes: vec![PageSize::Size4K],
        geometry: Geometry::new(sets, ways).unwrap(),
    };
    let tlb = TlbHierarchy::new(&[spec(1, 1, 4), spec(2, 4, 4)], Replacement::Lru, Inclusion::NonInclusive)
        .unwrap();
    TraceDriver::new(tlb, PageSize::Size4K)
}

/// A trace in `format` (`tlblab trace`), through the same gzip detection as a file.
fn trace(data: &[u8], format: Format) {
    let mut input = reader::decompressing(Box::new(data));
    let mut d = driver();
    match crate::cmd::trace::drive(&mut *input as &mut dyn BufRead, format, ORIGIN, &mut d) {
        Err(e) => rejected(e),
        Ok(()) => {
            let r = d.report();
            assert!(r.walks <= r.accesses);
        }
    }
}

pub fn raw64(data: &[u8]) {
    trace(data, Format::Raw64)
}

pub fn hex(data: &[u8]) {
    trace(data, Format::Hex)
}

pub fn lackey(data: &[u8]) {
    trace(data, Format::Lackey)
}

/// A gzip-compressed trace: the first byte picks the format (raw64, hex, lackey), the rest is
/// the file.
pub fn gzip(data: &[u8]) {
    let Some((&f, rest)) = data.split_first() else { return };
    trace(rest, [Format::Raw64, Format::Hex, Format::Lackey][f as usize % 3])
}

/// A rejection of a value given on its own (a flag's or key's value: the caller names the
/// flag): one non-empty line.
fn rejected_value(e: &str) {
    assert!(!e.trim().is_empty(), "an empty error");
    assert!(!e.contains('\n') && !e.contains('\r'), "an error of several lines: {e:?}");
}

/// A duration (`--duration`, `--warmup`, an experiment's `duration` keys): in range, or refused.
pub fn duration(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match crate::spec::parse_duration(t) {
        Err(e) => rejected_value(&e),
        Ok(d) => assert!((tlblab_model::run::MIN_INTERVAL..=tlblab_model::run::MAX_INTERVAL).contains(&d)),
    }
}

/// A workload text with its options and `KEY=VALUE` parameters (`--workload`, `--param`, an
/// experiment's `workload`): parsed, its canonical name parsing back to itself, and the run
/// checks a machine makes before setting anything up.
pub fn workload(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match tlblab_model::run::Workload::parse(t) {
        Err(e) => rejected_value(&e),
        Ok(w) => {
            let again = tlblab_model::run::Workload::parse(&w.name()).expect("a workload's own name parses");
            assert_eq!(again.name(), w.name());
            if let Some(d) = w.default_measure() {
                assert!(d <= tlblab_model::run::MAX_INTERVAL, "{d}");
            }
            static PROFILE: std::sync::OnceLock<tlblab_model::profile::MachineProfile> =
                std::sync::OnceLock::new();
            let p = PROFILE.get_or_init(|| crate::machines::load("haswell-ep-2s").expect("built in"));
            let cpus = p.topology.cpus();
            if let Some(t) = w.default_tasks(cpus) {
                assert!((1..=tlblab_model::run::MAX_TASKS).contains(&t), "{t} tasks");
                if let Err(e) = w.check_run(p, t) {
                    rejected_value(&e);
                }
                let _ = w.footprint_pages(t);
            }
        }
    }
}

/// An experiment's name as the directory `reproduce --out` writes: a child of the output
/// directory, or refused.
pub fn name(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let out = std::path::Path::new("/nonexistent-tlblab-out");
    match crate::store::child(out, t) {
        Err(e) => rejected_value(&e.to_string()),
        Ok(p) => {
            assert_eq!(p.parent(), Some(out), "{p:?} is not directly inside {out:?}");
            assert_eq!(p.file_name().and_then(|n| n.to_str()), Some(t));
        }
    }
}
