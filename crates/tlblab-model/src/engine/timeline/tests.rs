use super::*;
use crate::run::{run_recorded, RunResult, RunSpec};

fn spec(workload: &str, tasks: u32) -> RunSpec {
    RunSpec::of("5.18.1", workload, tasks, Ps::US * 100, Ps::US * 300)
}

fn recorded(machine: &str, workload: &str, tasks: u32, t: TimelineSpec) -> (RunResult, Recording) {
    let (r, rec) = run_recorded(&crate::profile::shipped(machine), &spec(workload, tasks), Some(t)).unwrap();
    (r, rec.unwrap())
}

/// Every CPU's slices nest: none ends inside another it starts in.
fn assert_nested(rec: &Recording) {
    let mut by_cpu: Vec<Vec<&Slice>> = vec![Vec::new(); rec.cpus.len()];
    for s in &rec.slices {
        assert!(s.end > s.start && s.start >= rec.window.0 && s.end <= rec.window.1, "{s:?}");
        by_cpu[s.cpu as usize].push(s);
    }
    for list in &mut by_cpu {
        list.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end), s.depth));
        let mut stack: Vec<&Slice> = Vec::new();
        for s in list.iter() {
            while stack.last().is_some_and(|t| t.end <= s.start) {
                stack.pop();
            }
            if let Some(t) = stack.last() {
                assert!(s.end <= t.end && s.depth > t.depth, "{s:?} in {t:?}");
            }
            stack.push(s);
        }
    }
}

fn within(rec: &Recording, cpu: u32, at: Ps, f: impl Fn(&Slice) -> bool) -> bool {
    rec.slices.iter().any(|s| s.cpu == cpu && s.start <= at && at < s.end && f(s))
}

#[test]
fn a_recorded_run_computes_what_an_unrecorded_one_does() {
    // Skylake: SMT and cost noise stretch the steps; ebizzy -m sleeps, wakes and goes lazy.
    for (m, w, n) in [("skylake-sp-2s", "tlb_flush1_threads", 8), ("ivybridge-4c8t", "ebizzy -m", 8)] {
        let p = crate::profile::shipped(m);
        let (plain, none) = run_recorded(&p, &spec(w, n), None).unwrap();
        let (r, rec) = recorded(m, w, n, TimelineSpec::default());
        assert!(none.is_none());
        assert_eq!(plain, r, "{m} {w}");
        assert!(rec.slices.len() > 100 && !rec.truncated, "{m} {w}: {}", rec.slices.len());
    }
}

#[test]
fn slices_nest_and_each_ipi_joins_its_send_to_the_interrupt_that_took_it() {
    let (r, rec) = recorded("skylake-sp-2s", "tlb_flush1_threads", 8, TimelineSpec::default());
    assert_nested(&rec);
    assert!(rec.flows.len() as u64 * 10 > r.counters["ipis_sent"] * 9, "{} flows", rec.flows.len());
    // Each leaves from the sender's IPI send, or from a handler that found a request
    // queued after its `llist_del_all` and sends the IPI that request's sender did.
    for f in &rec.flows {
        let send = |s: &Slice| s.label == Label::Bucket(Bucket::IpiSend) || s.label == Label::Irq;
        assert!(within(&rec, f.from_cpu, f.from, send), "{f:?}");
    }
    let from_send = rec
        .flows
        .iter()
        .filter(|f| within(&rec, f.from_cpu, f.from, |s| s.label == Label::Bucket(Bucket::IpiSend)))
        .count();
    assert!(from_send * 10 >= rec.flows.len() * 9, "{from_send} of {}", rec.flows.len());
    for f in &rec.flows {
        assert!(within(&rec, f.to_cpu, f.to, |s| s.label == Label::Irq), "{f:?}");
    }
    // Counters of both kinds, each TLB sample one value per structure.
    assert!(rec.samples.iter().any(|s| matches!(s, Sample::CallQueue { len, .. } if *len > 0)));
    for s in &rec.samples {
        if let Sample::TlbEntries { cpu, per_structure, .. } = s {
            assert_eq!(per_structure.len(), rec.cpus[*cpu as usize].tlb_names.len());
        }
    }
}

#[test]
fn the_step_slices_add_up_to_the_time_attributed() {
    let (r, rec) = recorded("skylake-sp-2s", "tlb_flush1_threads", 8, TimelineSpec::default());
    let total: u64 = r.attribution.iter().flat_map(|m| m.values()).sum();
    for b in Bucket::ALL {
        let attributed: u64 = r.attribution.iter().map(|m| m[b.name()]).sum();
        let drawn: u64 = rec
            .slices
            .iter()
            .filter(|s| (s.cpu as usize) < r.attribution.len() && s.depth == STEP)
            .filter(|s| s.label.category() == b.name())
            .map(|s| (s.end - s.start).0)
            .sum();
        // The window's edges: attribution counts a step that straddles one whole, the
        // timeline the part inside.
        let diff = attributed.abs_diff(drawn);
        assert!(diff * 200 <= total, "{}: attributed {attributed} drawn {drawn} of {total}", b.name());
    }
}

#[test]
fn the_same_run_records_the_same_timeline() {
    let a = recorded("ivybridge-4c8t", "ebizzy -m", 8, TimelineSpec::default()).1;
    let b = recorded("ivybridge-4c8t", "ebizzy -m", 8, TimelineSpec::default()).1;
    assert!(a == b);
}

#[test]
fn lazy_mode_system_calls_and_lock_waits_are_named() {
    let (_, rec) = recorded("ivybridge-4c8t", "ebizzy -m", 8, TimelineSpec::default());
    assert_nested(&rec);
    let has = |l: Label| rec.slices.iter().any(|s| s.label == l);
    assert!(has(Label::Lazy) && has(Label::Op("munmap")) && has(Label::Lock("mmap_lock")));
    assert!(has(Label::Bucket(Bucket::Sched)) && has(Label::Bucket(Bucket::Idle)));
    // Lazy mode holds no user work.
    for l in rec.slices.iter().filter(|s| s.label == Label::Lazy) {
        assert!(!rec.slices.iter().any(|s| s.cpu == l.cpu
            && s.label == Label::Bucket(Bucket::User)
            && s.start >= l.start
            && s.end <= l.end));
    }
}

#[test]
fn a_window_and_the_event_cap_bound_the_recording() {
    let w = TimelineSpec { window: Some((Ps::US * 50, Ps::US * 100)), ..Default::default() };
    let (_, rec) = recorded("skylake-sp-2s", "tlb_flush1_threads", 8, w);
    assert_eq!(rec.window, (Ps::US * 150, Ps::US * 200));
    assert_nested(&rec);
    assert!(rec.slices.iter().any(|s| s.start == rec.window.0) && !rec.flows.is_empty());
    let cap = TimelineSpec { max_events: 2000, ..Default::default() };
    let (_, rec) = recorded("skylake-sp-2s", "tlb_flush1_threads", 8, cap);
    assert!(rec.truncated && rec.window.1 < Ps::US * 400, "{:?}", rec.window);
    // At most the cap, and what each CPU had open or under way when it was reached.
    let kept = rec.slices.len() + rec.samples.len();
    assert!(kept <= 2000 + 3 * rec.cpus.len(), "{kept}");
    assert_nested(&rec);
}

#[test]
fn a_reclaim_run_samples_the_file_lru_lists_as_they_move() {
    // Two readers in a 64-MiB cgroup reclaim from the first milliseconds.
    let w = "vm-scalability lru-file-mmap-read mem_mib=256 memcg_mib=64";
    let s = RunSpec::of("6.18", w, 2, Ps::MS * 40, Ps::MS * 10);
    let p = crate::profile::shipped("ivybridge-4c8t");
    let rec = run_recorded(&p, &s, Some(TimelineSpec::default())).unwrap().1.unwrap();
    let lru: Vec<(Ps, u64, u64)> = rec
        .samples
        .iter()
        .filter_map(|s| match s {
            Sample::FileLru { at, inactive, active } => Some((*at, *inactive, *active)),
            _ => None,
        })
        .collect();
    assert!(lru.len() > 10, "{} samples", lru.len());
    // The cgroup's 16384 pages, less those on per-CPU lists or isolated.
    assert!(lru.iter().all(|&(_, i, a)| (15_000..=16_384).contains(&(i + a))), "{lru:?}");
    // Each sample moved by the threshold since the one before, in time order.
    for w in lru.windows(2) {
        assert!(w[1].0 >= w[0].0);
        assert!(w[0].1.abs_diff(w[1].1) + w[0].2.abs_diff(w[1].2) >= LRU_SAMPLE_PAGES, "{w:?}");
    }
    // A profile without [reclaim] has no lists to sample.
    let (_, rec) = recorded("skylake-sp-2s", "tlb_flush1_threads", 2, TimelineSpec::default());
    assert!(!rec.samples.iter().any(|s| matches!(s, Sample::FileLru { .. })));
}
