use super::*;
use std::path::PathBuf;

/// (path, text) of every built-in profile.
fn shipped() -> Vec<(String, String)> {
    crate::builtin::PROFILES.iter().map(|(n, t)| (format!("profiles/{n}.toml"), t.to_string())).collect()
}

#[test]
fn every_shipped_profile_parses_validates_and_builds() {
    let profiles = shipped();
    assert!(profiles.len() >= 5, "expected the built-in profiles, found {}", profiles.len());
    for (path, text) in profiles {
        let p: MachineProfile = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        p.validate().unwrap_or_else(|e| panic!("{path}: {e}"));
        let file_stem = PathBuf::from(&path).file_stem().unwrap().to_string_lossy().into_owned();
        assert_eq!(p.name, file_stem, "{path}: `name` must match the file name");
        let tlb = p.build_tlb();
        assert!(!tlb.views(0).is_empty());
        let core = p.build_core_tlb();
        assert_eq!(core.lps(), p.topology.threads_per_core as usize, "{path}");
    }
}

fn base() -> MachineProfile {
    let (_, text) =
        shipped().into_iter().find(|(p, _)| p.ends_with("ivybridge-4c8t.toml")).expect("ivybridge profile");
    toml::from_str(&text).unwrap()
}

#[test]
fn validation_names_the_key_and_the_allowed_values() {
    let mut p = base();
    p.tlb.structures[0].ways = 4;
    p.tlb.structures[0].entries = 48;
    let e = p.validate().unwrap_err();
    assert!(e.key.starts_with("tlb.structure[0]."), "{e}");

    let mut p = base();
    p.cpu.vendor = "via".into();
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "cpu.vendor");
    assert!(e.message.contains("intel, amd, powerpc"), "{e}");

    let mut p = base();
    p.kernel.invlpg_cycles.source = " ".into();
    assert_eq!(p.validate().unwrap_err().key, "kernel.invlpg_cycles.source");

    let mut p = base();
    p.walk.cycles.value = -1.0;
    assert_eq!(p.validate().unwrap_err().key, "walk.cycles.value");

    let mut p = base();
    p.ipi = None;
    assert_eq!(p.validate().unwrap_err().key, "ipi");
}

#[test]
fn duplicate_structures_for_the_same_accesses_are_rejected() {
    let mut p = base();
    let dup = p.tlb.structures.iter().find(|s| s.level == 2).unwrap().clone();
    p.tlb.structures.push(dup);
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "tlb.structure");
    assert!(e.message.contains("both hold"), "{e}");
}

#[test]
fn missing_first_level_for_an_access_kind_is_rejected() {
    let mut p = base();
    p.tlb.structures.retain(|s| !(s.level == 1 && s.serves == Serves::Instruction));
    let e = p.validate().unwrap_err();
    assert!(e.message.contains("Fetch"), "{e}");
}

#[test]
fn unknown_and_missing_keys_fail_to_parse() {
    let (_, text) = shipped().into_iter().next().unwrap();
    let extra = text.replacen("schema_version = 1", "schema_version = 1\nbogus = 3", 1);
    let e = toml::from_str::<MachineProfile>(&extra).unwrap_err().to_string();
    assert!(e.contains("bogus"), "{e}");
    let missing = text.replacen("schema_version = 1\n", "", 1);
    let e = toml::from_str::<MachineProfile>(&missing).unwrap_err().to_string();
    assert!(e.contains("schema_version"), "{e}");
}

#[test]
fn kernel_path_costs_are_required_and_checked() {
    let (_, text) = shipped().into_iter().find(|(p, _)| p.ends_with("haswell-ep-2s.toml")).unwrap();
    let missing: String =
        text.lines().filter(|l| !l.starts_with("page_alloc_cycles")).map(|l| format!("{l}\n")).collect();
    let e = toml::from_str::<MachineProfile>(&missing).unwrap_err().to_string();
    assert!(e.contains("page_alloc_cycles"), "{e}");
    let mut p = base();
    p.kernel.flush_call_cycles.value = -3.0;
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "kernel.flush_call_cycles.value");
    assert!(e.message.contains("allowed 0 ..= 1000000"), "{e}");
}

#[test]
fn a_pti_machine_needs_the_pti_entry_cost() {
    let (_, text) = shipped().into_iter().find(|(p, _)| p.ends_with("haswell-ep-2s.toml")).unwrap();
    let mut p: MachineProfile = toml::from_str(&text).unwrap();
    assert!(p.cpu.features.pti);
    p.kernel.pti_entry_exit_ns = None;
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "kernel.pti_entry_exit_ns");
    assert!(e.message.contains("required when cpu.features has pti"), "{e}");
    p.cpu.features.pti = false;
    p.validate().unwrap();
}

#[test]
fn smt_throughput_is_required_with_siblings_and_bounded_by_them() {
    let mut p = base();
    assert_eq!(p.topology.threads_per_core, 2);
    p.topology.smt_throughput = None;
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "topology.smt_throughput");
    assert!(e.message.contains("missing") && e.message.contains("allowed 1 ..= 2"), "{e}");
    let mut p = base();
    p.topology.smt_throughput.as_mut().unwrap().value = 2.5;
    assert_eq!(p.validate().unwrap_err().key, "topology.smt_throughput.value");
    let mut p = base();
    p.topology.threads_per_core = 1;
    let e = p.validate().unwrap_err();
    assert!(e.key == "topology.smt_throughput" && e.message.contains("only with"), "{e}");
}

#[test]
fn more_threads_per_core_than_a_core_tlb_serves_name_the_topology_key() {
    let mut p = base();
    p.topology.threads_per_core = 9;
    p.topology.cores_per_socket = 1;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("topology.threads_per_core") && e.contains("1 ..= 8"), "{e}");
}

#[test]
fn uncore_values_are_bounded_and_name_their_key() {
    let mut p = base();
    p.uncore.as_mut().expect("ivybridge-4c8t has [uncore]").dram_sustained_fraction.value = 1.5;
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "uncore.dram_sustained_fraction.value", "{e}");
    let mut p = base();
    p.uncore.as_mut().unwrap().llc_mib.value = 0.0;
    assert_eq!(p.validate().unwrap_err().key, "uncore.llc_mib.value");
    // The section is optional: a profile without it is valid (bulk transfers at per-core rates).
    let mut p = base();
    p.uncore = None;
    p.validate().unwrap();
}

#[test]
fn an_acks_locked_part_is_at_most_the_ack_and_needs_it() {
    let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
    p.validate().unwrap();
    let n = p.net.as_mut().unwrap();
    n.tcp_ack_locked_cycles.as_mut().unwrap().value = n.tcp_ack_cycles.as_ref().unwrap().value + 1.0;
    let e = p.validate().unwrap_err();
    assert_eq!(e.key, "net.tcp_ack_locked_cycles", "{e}");
    let n = p.net.as_mut().unwrap();
    n.tcp_ack_cycles = None;
    assert_eq!(p.validate().unwrap_err().key, "net.tcp_ack_locked_cycles");
    // Both absent (a profile written before them): valid, an ACK costs nothing.
    p.net.as_mut().unwrap().tcp_ack_locked_cycles = None;
    p.validate().unwrap();
}

#[test]
fn a_mappings_locked_parts_are_at_most_their_wholes() {
    let mut p = crate::profile::shipped("ivybridge-4c8t");
    p.validate().unwrap();
    let r = p.reclaim.as_mut().unwrap();
    r.remove_mapping_locked_cycles.as_mut().unwrap().value = r.remove_mapping_cycles.value + 1.0;
    assert_eq!(p.validate().unwrap_err().key, "reclaim.remove_mapping_locked_cycles");
    let r = p.reclaim.as_mut().unwrap();
    r.remove_mapping_locked_cycles = None;
    r.pagecache_add_locked_cycles.as_mut().unwrap().value = r.pagecache_fill_page_cycles.value + 1.0;
    assert_eq!(p.validate().unwrap_err().key, "reclaim.pagecache_add_locked_cycles");
    // Absent (a profile written before them): valid, the mapping has no lock.
    p.reclaim.as_mut().unwrap().pagecache_add_locked_cycles = None;
    p.validate().unwrap();
}
