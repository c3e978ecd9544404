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
