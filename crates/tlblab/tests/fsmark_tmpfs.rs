//! fsmark's `--fs tmpfs` end to end: `tlblab run` simulates tmpfs's create path (no ext4 state,
//! docs/references/linux-mm.md#tmpfs-create) and names it in the workload; a file system the
//! model does not have is refused with one line naming the flag and the allowed values.

use crate::common::*;

fn fsmark(fs: &str) -> std::process::Output {
    let w = format!("fsmark -d /dev/shm/fsmark -D 64 -s 0 -S 0 -n 5000 {fs}");
    let args =
        ["run", "--machine", "ivybridge-i3-3240", "--kernel", "4.9", "--workload", &w, "--threads", "2"];
    tlblab(&[&args[..], &["--warmup", "200us", "--duration", "1ms", "--json"]].concat())
}

fn files_per_sec(o: &std::process::Output) -> (f64, serde_json::Value) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (v["metric"]["value"].as_f64().unwrap(), v)
}

#[test]
fn tmpfs_creates_without_ext4_state_and_faster_than_ext4_at_the_same_costs() {
    let (ext4, e) = files_per_sec(&fsmark(""));
    let (tmpfs, t) = files_per_sec(&fsmark("--fs tmpfs"));
    assert!(t["config"]["workload"].as_str().unwrap().ends_with("--fs tmpfs"), "{}", t["config"]);
    let n = |v: &serde_json::Value, k: &str| v["counters"][k].as_u64().unwrap();
    assert!(n(&e, "ext4_inodes") > 0 && n(&e, "ext4_metadata_pages") > 0);
    assert_eq!((n(&t, "ext4_inodes"), n(&t, "ext4_metadata_pages")), (0, 0));
    assert!(n(&t, "fs_creates") > 0 && n(&t, "d_allocs") == n(&t, "fs_creates"));
    assert!(tmpfs > ext4, "tmpfs {tmpfs} vs ext4 {ext4} files/s");
}

#[test]
fn an_unknown_file_system_is_refused_naming_the_flag() {
    let o = fsmark("--fs xfs");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("--fs xfs") && e.contains("ext4|tmpfs"), "{e}");
}
