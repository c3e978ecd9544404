use super::*;

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-store-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(d.join("cells/k")).unwrap();
    d
}

#[test]
fn temp_names_carry_host_pid_and_counter_and_parse_back() {
    let a = temp_name("t1.json");
    let b = temp_name("t1.json");
    assert_ne!(a, b, "two writes of one file in one process must not share a temporary file");
    assert!(a.starts_with(".t1.json.tmp-"), "{a}");
    assert_eq!(temp_owner(&a), Some((host(), std::process::id())));
    // Host names may hold dashes.
    assert_eq!(temp_owner(".x.tmp-node-07-4242-3"), Some(("node-07".into(), 4242)));
    // The pre-shard format (`.NAME.tmp-PID`) names no host.
    assert_eq!(temp_owner(".x.tmp-4242"), None);
}

#[test]
fn write_atomic_leaves_only_the_file() {
    let d = scratch("write");
    let p = d.join("cells/k/t2.json");
    write_atomic(&p, b"one").unwrap();
    write_atomic(&p, b"two").unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"two");
    let names: Vec<_> =
        std::fs::read_dir(d.join("cells/k")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["t2.json"]);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn only_temporary_files_of_dead_writers_are_removed() {
    let d = scratch("stale");
    let cell = d.join("cells/k");
    // A process that has exited: its id names no live process (it is reaped before we look).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let h = host();
    let live_mine = format!(".t1.json.tmp-{h}-{me}-0");
    let live_other = format!(".t2.json.tmp-{h}-1-0"); // pid 1 always runs
    let dead_mine = format!(".t4.json.tmp-{h}-{dead}-0");
    let foreign_new = ".t8.json.tmp-elsewhere-77-0".to_string();
    let foreign_old = ".t16.json.tmp-elsewhere-78-0".to_string();
    for n in [&live_mine, &live_other, &dead_mine, &foreign_new, &foreign_old] {
        std::fs::write(cell.join(n), b"partial").unwrap();
    }
    let f = std::fs::File::options().write(true).open(cell.join(&foreign_old)).unwrap();
    f.set_modified(SystemTime::now() - FOREIGN_TEMP_AGE - Duration::from_secs(60)).unwrap();
    drop(f);
    std::fs::write(d.join("summary.json"), b"{}").unwrap();
    remove_stale_temps(&d);
    let mut left: Vec<String> = std::fs::read_dir(&cell)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want = vec![live_mine, live_other, foreign_new];
    want.sort();
    assert_eq!(left, want);
    assert!(d.join("summary.json").exists());
    std::fs::remove_dir_all(&d).ok();
}

// Interrupted runs. A child process (this test binary, running `child_writer`) reproduces a
// small experiment into a results directory and is stopped dead at a chosen point of its writes
// (`may_die`: before a temporary file exists, with it empty, half written, whole, or just after
// the rename); the parent then reads the directory as a reader would, and runs again.

/// Set in a child: the step (counting every `may_die` of the process) at which it exits.
const DIE_AT: &str = "TLBLAB_TEST_STORE_DIE_AT";
/// Set in a child: the results directory and the experiment file.
const CHILD_OUT: &str = "TLBLAB_TEST_STORE_OUT";
const CHILD_EXPERIMENT: &str = "TLBLAB_TEST_STORE_EXPERIMENT";
const CHILD_JOBS: &str = "TLBLAB_TEST_STORE_JOBS";
/// The exit status of a child stopped by `may_die` (what a reader of its directory must survive).
const DIED: i32 = 86;

static STEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(super) fn may_die() {
    static AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let at = *AT.get_or_init(|| std::env::var(DIE_AT).ok().and_then(|v| v.parse().ok()));
    let step = STEPS.fetch_add(1, Ordering::SeqCst);
    if at == Some(step) {
        // No destructor, no unwinding: the kernel closes the files, as after a SIGKILL.
        std::process::exit(DIED);
    }
}

/// Two kernels x three thread counts, two iterations each, tens of microseconds per run.
const EXPERIMENT: &str = r#"
name = "store-crash"
seed_thread = "000"
title = "interrupted store"
machine = "haswell-ep-2s"
workload = "tlb_flush1_threads"
threads = [1, 2, 3]
iterations = 2
quick_iterations = 2
warmup = "10us"
duration = "30us"
quick_duration = "30us"

[table]
rows = "tasks"
style = "bare"
stats = [{ of = "mean" }, { of = "coeffvar" }]

[[kernel]]
label = "vanilla"
preset = "5.18.1"

[[kernel]]
label = "+patch"
preset = "5.18.1+patch"
"#;

#[test]
#[ignore = "a child process of interrupted_runs_never_show_a_partial_file_and_a_rerun_completes"]
fn child_writer() {
    let (Ok(out), Ok(exp)) = (std::env::var(CHILD_OUT), std::env::var(CHILD_EXPERIMENT)) else {
        panic!("run by interrupted_runs_never_show_a_partial_file_and_a_rerun_completes only");
    };
    let jobs = std::env::var(CHILD_JOBS).ok().and_then(|j| j.parse().ok());
    crate::cmd::reproduce::run(crate::cmd::reproduce::ReproduceArgs {
        name: Some(exp),
        out: Some(out.into()),
        quick: true,
        jobs,
        shard: None,
    })
    .unwrap();
    println!("store-steps {}", STEPS.load(Ordering::SeqCst));
}

/// Runs `child_writer` into `out`, stopped at step `die_at` if given: its exit status and the
/// number of steps a whole run took (`None` if it died).
fn spawn_writer(out: &Path, exp: &Path, jobs: usize, die_at: Option<u64>) -> (Option<i32>, Option<u64>) {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "store::tests::child_writer", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_OUT, out)
        .env(CHILD_EXPERIMENT, exp)
        .env(CHILD_JOBS, jobs.to_string())
        .env("TLBLAB_NO_PROGRESS", "1")
        .env_remove(DIE_AT)
        .stdin(std::process::Stdio::null());
    if let Some(k) = die_at {
        c.env(DIE_AT, k.to_string());
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let steps = text.lines().find_map(|l| l.strip_prefix("store-steps ")?.trim().parse().ok());
    (o.status.code(), steps)
}

/// Every file under `dir`, by path relative to it: (name, bytes), temporary files apart.
fn files(dir: &Path) -> (std::collections::BTreeMap<String, Vec<u8>>, Vec<String>) {
    let (mut whole, mut temps) = (std::collections::BTreeMap::new(), Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name().to_string_lossy().starts_with('.') {
                temps.push(rel);
            } else {
                whole.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    (whole, temps)
}

/// Kills (one or two, each somewhere in a run's writes, the later ones in reruns that reuse
/// what the earlier left), then a run to the end, for random kill points. After every kill a
/// reader sees only files identical to a clean run's (so none half written: no cell, summary or
/// report file), and `load_set` reads the set whenever its summary is there; the final run
/// completes, removes the dead writers' temporary files and leaves exactly the clean run's files.
#[test]
fn interrupted_runs_never_show_a_partial_file_and_a_rerun_completes() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let root = std::env::temp_dir().join(format!("tlblab-store-kill-{}", std::process::id()));
    std::fs::remove_dir_all(&root).ok();
    std::fs::create_dir_all(&root).unwrap();
    let exp = root.join("store-crash.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let clean_dir = root.join("clean");
    let (status, steps) = spawn_writer(&clean_dir, &exp, 2, None);
    assert_eq!(status, Some(0), "the clean run failed");
    let steps = steps.expect("the clean run reports its steps");
    let (clean, temps) = files(&clean_dir);
    assert!(temps.is_empty(), "a clean run left {temps:?}");
    assert!(clean.keys().filter(|k| k.contains("/cells/")).count() == 6, "{:?}", clean.keys());
    assert!(clean.contains_key("store-crash/summary.json") && clean.contains_key("store-crash/index.html"));
    // Five steps per file written.
    assert_eq!(steps, 5 * clean.len() as u64);
    let mut runner = TestRunner::new(Config { cases: 6, failure_persistence: None, ..Config::default() });
    let case = std::sync::atomic::AtomicU64::new(0);
    let result = runner.run(&proptest::collection::vec((0..steps, 1usize..=2), 1..=2), |kills| {
        let out = root.join(format!("run-{}", case.fetch_add(1, Ordering::SeqCst)));
        std::fs::remove_dir_all(&out).ok();
        for &(k, jobs) in &kills {
            let (status, _) = spawn_writer(&out, &exp, jobs, Some(k));
            // A rerun reuses cells, so it has fewer steps and may finish before step k.
            prop_assert!(status == Some(DIED) || status == Some(0), "writer exited {:?}", status);
            let (whole, _) = files(&out);
            for (name, bytes) in &whole {
                prop_assert!(
                    clean.get(name) == Some(bytes),
                    "after a kill at step {}: {} ({} bytes) is not the clean run's",
                    k,
                    name,
                    bytes.len()
                );
            }
            if whole.contains_key("store-crash/summary.json") {
                let loaded = crate::results::load_set(&out.join("store-crash"));
                prop_assert!(
                    loaded.is_ok(),
                    "summary.json is there but the set does not load: {:?}",
                    loaded.err()
                );
            }
        }
        let (status, _) = spawn_writer(&out, &exp, 2, None);
        prop_assert_eq!(status, Some(0));
        let (whole, temps) = files(&out);
        prop_assert!(temps.is_empty(), "the dead writers' temporary files are left: {:?}", temps);
        prop_assert!(whole == clean, "the rerun's files are not the clean run's");
        std::fs::remove_dir_all(&out).ok();
        Ok(())
    });
    std::fs::remove_dir_all(&root).ok();
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn names_become_paths_only_inside_the_directory() {
    let dir = scratch("names");
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(child(&dir, "seed-002").unwrap(), dir.join("seed-002"));
    assert_eq!(child(&dir, "..x").unwrap(), dir.join("..x"));
    for bad in ["", ".", "..", "../x", "/tmp/x", "a/b", "a\\b", "x\0", "x\ny"] {
        let e = child(&dir, bad).unwrap_err().to_string();
        assert!(!e.contains('\n') && e.starts_with('`'), "{bad:?}: {e}");
    }
    // A symbolic link already there could lead anywhere.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(std::env::temp_dir(), dir.join("link")).unwrap();
        assert!(child(&dir, "link").unwrap_err().to_string().contains("symbolic link"));
    }
    // An output path under a file is refused before anything runs.
    let file = dir.join("f");
    std::fs::write(&file, b"x").unwrap();
    assert!(check_out_dir(&dir.join("new/deeper"), "--out").is_ok());
    for p in [file.clone(), file.join("sub")] {
        let e = check_out_dir(&p, "--out").unwrap_err().to_string();
        assert!(e.starts_with("--out ") && e.contains("is a file"), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
