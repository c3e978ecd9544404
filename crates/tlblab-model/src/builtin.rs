//! The repository's built-in data, embedded at build time (build.rs): kernel presets, machine
//! profiles, seed experiments and MPC8xx layouts, each as (name, TOML text). Everything that
//! knows a built-in by name (the presets, `tlblab`'s machines and experiments, the 8xx model,
//! tests and benches) finds it here.

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// The text of the entry called `name` in one of the tables above.
pub fn find(table: &'static [(&'static str, &'static str)], name: &str) -> Option<&'static str> {
    table.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The names of a table's entries, in its order.
pub fn names(table: &'static [(&'static str, &'static str)]) -> Vec<&'static str> {
    table.iter().map(|(n, _)| *n).collect()
}

/// A built-in profile's text; panics on an unknown name (for tests and benches, whose names are
/// the repository's own).
pub fn profile(name: &str) -> &'static str {
    find(PROFILES, name).unwrap_or_else(|| panic!("no built-in profile `{name}`"))
}

/// A shipped layout's text; panics on an unknown name, as [`profile`].
pub fn layout(name: &str) -> &'static str {
    find(LAYOUTS, name).unwrap_or_else(|| panic!("no built-in layout `{name}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_holds_the_repositorys_files() {
        for (table, dir) in
            [(KERNELS, "kernels"), (PROFILES, "profiles"), (EXPERIMENTS, "experiments"), (LAYOUTS, "layouts")]
        {
            let on_disk = std::fs::read_dir(format!("{}/../../{dir}", env!("CARGO_MANIFEST_DIR")))
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "toml"))
                .count();
            assert_eq!(table.len(), on_disk, "{dir}");
        }
        assert!(
            names(KERNELS).iter().position(|n| *n == "3.4")
                < names(KERNELS).iter().position(|n| *n == "3.13")
        );
        assert!(find(PROFILES, "mpc855t").is_some() && find(PROFILES, "nope").is_none());
    }
}
