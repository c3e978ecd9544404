use super::*;

fn profile() -> MachineProfile {
    crate::machines::load("haswell-ep-2s").unwrap()
}

#[test]
fn every_sourced_number_is_a_key() {
    let v = sourced_values(&profile());
    let get = |k: &str| v.iter().find(|x| x.0 == k).unwrap_or_else(|| panic!("{k} missing: {v:?}"));
    assert_eq!(get("cpu.clock_mhz").1, 2300.0);
    assert!(get("kernel.invlpg_cycles").1 > 0.0);
    // Array elements are named by their `name`.
    assert!(v.iter().any(|x| x.0.starts_with("tlb.structure[") && x.0.ends_with("].hit_cycles")), "{v:?}");
}

#[test]
fn spreads_flag_the_key_that_moved_and_pick_the_central_run() {
    let mut runs: Vec<Option<MachineProfile>> = (0..5).map(|_| Some(profile())).collect();
    let base = runs[0].as_ref().unwrap().kernel.invlpg_cycles.value;
    for (i, f) in [1.0, 1.05, 0.97, 1.4, 1.02].iter().enumerate() {
        runs[i].as_mut().unwrap().kernel.invlpg_cycles.value = base * f;
    }
    runs[2] = None;
    let keys = key_spreads(&runs);
    let k = keys.iter().find(|k| k.key == "kernel.invlpg_cycles").unwrap();
    assert_eq!(k.values[2], None);
    // Median of 1.0, 1.02, 1.05, 1.4 is 1.035: the 1.4 run is 35% off.
    assert!((k.median - 1.035 * base).abs() < 1e-6 * base, "{k:?}");
    assert!((k.spread - (1.4 / 1.035 - 1.0)).abs() < 1e-9, "{k:?}");
    let clock = keys.iter().find(|k| k.key == "cpu.clock_mhz").unwrap();
    assert_eq!(clock.spread, 0.0);
    let w = warnings(&[], &keys, &[(2, "R is not positive".into())]);
    assert!(w.iter().any(|w| w.starts_with("kernel.invlpg_cycles: spread 35%")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("run 3: no profile")), "{w:?}");
    assert_eq!(w.len(), 2, "{w:?}");
    // 1.05 and 1.02 straddle the median 1.035; 1.05 is nearer in ratio (ln 1.0145 < ln 1/0.9855).
    assert_eq!(most_central(&runs, &keys), Some(1));
}
