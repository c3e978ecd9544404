//! Which event counters a table prints, as `perf stat` prints the events that counted: the one
//! rule `tlblab run`, `tlblab compare` and the HTML reports share.
//!
//! The model registers its counters by subsystem (`linux::Counters::groups()`: tlbflush, smp,
//! page_alloc, ext4, pipe, ...), and every group is reported whatever the workload, so a
//! tlb_flush1 run lists ~90 counters of file systems, pipes and sockets it never touches. The
//! rule: a counter is printed when it is non-zero in some column. A zero counter of a subsystem
//! the workload uses (another counter of its group is non-zero somewhere) is the interesting
//! kind of zero (`broadcast_flushes` on a machine without INVLPGB), so the footnote line counts
//! those by subsystem, apart from the zeros of unused subsystems (`--all-counters` names them
//! all). With `all`, every counter is printed, as before.

use std::collections::BTreeMap;

/// The counters to print and what was left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Counter names to print, in name order.
    pub shown: Vec<String>,
    /// Zero everywhere but of a subsystem in use: (group, its zero counters).
    pub zero_in_use: Vec<(String, Vec<String>)>,
    /// How many zero counters of unused subsystems were left out.
    pub unused: usize,
}

impl Selection {
    /// Whether anything was left out.
    pub fn hid_any(&self) -> bool {
        self.unused > 0 || !self.zero_in_use.is_empty()
    }

    /// One line saying what was left out (empty when nothing was).
    pub fn footnote(&self) -> String {
        if !self.hid_any() {
            return String::new();
        }
        let zero: Vec<String> =
            self.zero_in_use.iter().map(|(g, names)| format!("{g} {}", names.len())).collect();
        let in_use: usize = self.zero_in_use.iter().map(|(_, n)| n.len()).sum();
        let mut s = String::from("(not shown, zero in every column: ");
        if !zero.is_empty() {
            s += &format!("{in_use} counter(s) of subsystems in use ({}) and ", zero.join(", "));
        }
        s += &format!("{} of subsystems this workload does not use; --all-counters shows them)", self.unused);
        s
    }
}

/// The model's subsystem of a counter name; names of no group (results of an older model) are
/// their own group.
fn group_of(groups: &[(&'static str, Vec<&'static str>)], name: &str) -> String {
    groups
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map_or_else(|| format!("other:{name}"), |(g, _)| g.to_string())
}

/// The counters of `columns` (each a column's counters: per op, totals, any unit) to print; see
/// the module comment. `all` keeps every one.
pub fn applicable<'a, I>(columns: I, all: bool) -> Selection
where
    I: IntoIterator<Item = &'a BTreeMap<String, f64>>,
{
    let columns: Vec<&BTreeMap<String, f64>> = columns.into_iter().collect();
    let mut names: Vec<&String> = columns.iter().flat_map(|c| c.keys()).collect();
    names.sort();
    names.dedup();
    let nonzero = |n: &String| columns.iter().any(|c| c.get(n).is_some_and(|v| *v != 0.0 && !v.is_nan()));
    if all {
        return Selection { shown: names.into_iter().cloned().collect(), ..Selection::default() };
    }
    let groups = tlblab_model::linux::Counters::groups();
    let used: Vec<String> = names.iter().filter(|n| nonzero(n)).map(|n| group_of(&groups, n)).collect();
    let mut out = Selection::default();
    let mut zero: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in names {
        if nonzero(n) {
            out.shown.push(n.clone());
        } else {
            let g = group_of(&groups, n);
            if used.contains(&g) {
                zero.entry(g).or_default().push(n.clone());
            } else {
                out.unused += 1;
            }
        }
    }
    // Groups in the model's registration order.
    let rank = |g: &str| groups.iter().position(|(n, _)| *n == g).unwrap_or(groups.len());
    let mut zero: Vec<(String, Vec<String>)> = zero.into_iter().collect();
    zero.sort_by_key(|(g, _)| rank(g));
    out.zero_in_use = zero;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn non_zero_anywhere_is_shown_and_zeros_are_split_by_subsystem_use() {
        // invlpg and ipis_sent count; early_returns is a zero of tlbflush (in use: invlpg);
        // ext4_inodes and pipe_* are zeros of unused subsystems.
        let a = col(&[("invlpg", 2.0), ("early_returns", 0.0), ("ext4_inodes", 0.0), ("ipis_sent", 0.0)]);
        let b = col(&[("invlpg", 0.0), ("early_returns", 0.0), ("ext4_inodes", 0.0), ("ipis_sent", 1.5)]);
        let s = applicable([&a, &b], false);
        assert_eq!(s.shown, ["invlpg", "ipis_sent"]);
        assert_eq!(s.zero_in_use, [("tlbflush".to_string(), vec!["early_returns".to_string()])]);
        assert_eq!(s.unused, 1);
        let f = s.footnote();
        assert_eq!(
            f,
            "(not shown, zero in every column: 1 counter(s) of subsystems in use (tlbflush 1) and 1 of \
             subsystems this workload does not use; --all-counters shows them)"
        );
        // --all-counters: everything, nothing to say.
        let all = applicable([&a, &b], true);
        assert_eq!(all.shown.len(), 4);
        assert!(!all.hid_any() && all.footnote().is_empty());
        // Nothing zero: no footnote.
        assert!(applicable([&col(&[("invlpg", 1.0)])], false).footnote().is_empty());
        // A name the model does not know is its own subsystem.
        let s = applicable([&col(&[("gone_counter", 0.0), ("invlpg", 1.0)])], false);
        assert_eq!((s.shown.len(), s.unused), (1, 1));
    }
}
