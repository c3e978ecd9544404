//! dd on x86 end to end: `tlblab run` of `dd if=/dev/zero of=FILE bs=4k` on an x86 machine runs
//! the tmpfs path (linux/mm/shmem.rs; docs/references/linux-mm.md#tmpfs-write) where the
//! profile has `fs.tmpfs_write_cycles`, and without it says, in one line, which key is missing.

use crate::common::*;

const DD: &str = "dd if=/dev/zero of=f bs=4k count=1000";

fn dd(machine: &str) -> std::process::Output {
    let args = ["run", "--machine", machine, "--kernel", "6.18", "--workload", DD];
    tlblab(&[&args[..], &["--warmup", "100us", "--duration", "1ms", "--json"]].concat())
}

#[test]
fn a_built_in_x86_profile_without_the_key_is_refused_naming_it() {
    let o = dd("ivybridge-i3-3240");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("fs.tmpfs_write_cycles") && e.contains("ivybridge-i3-3240"), "{e}");
}

#[test]
fn with_the_key_each_block_allocates_a_page_and_the_metric_is_real_seconds() {
    let dir = std::env::temp_dir().join(format!("tlblab-e2e-dd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/ivybridge-i3-3240.toml");
    let text = std::fs::read_to_string(root).unwrap()
        + "\n[fs.tmpfs_write_cycles]\nvalue = 600.0\nsource = \"e2e test\"\nconfidence = \"estimate\"\n";
    let p = dir.join("ivb.toml");
    std::fs::write(&p, text).unwrap();
    let o = dd(p.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["metric"]["name"], "real");
    assert_eq!(v["metric"]["unit"], "seconds");
    let n = |k: &str| v["counters"][k].as_u64().unwrap();
    // 1000 blocks of a few hundred ns to a microsecond or two each.
    let real = v["metric"]["value"].as_f64().unwrap();
    assert!((1e-4..1e-2).contains(&real), "{real}");
    assert!(n("tmpfs_writes") > 100 && n("tmpfs_write_allocs") > 0, "{}", v["counters"]);
    assert_eq!(n("pages_zeroed"), 0, "{}", v["counters"]);
}
