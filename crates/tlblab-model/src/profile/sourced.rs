//! Every sourced number of a profile (`{ value, source, confidence }`) by its key path, walked
//! over the profile's TOML form: the one walk for whatever reads, checks or relabels them (the
//! probe's repeat spreads, the host profile's fallbacks, `validate`'s borrowed sections).

use super::MachineProfile;

/// Where a sourced number sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedKey {
    /// As validation errors name it: array elements by index (`tlb.structure[2].hit_cycles`).
    pub path: String,
    /// For people: array elements by their `name` where they have one
    /// (`tlb.structure[L1 dTLB 4K].hit_cycles`), else by index.
    pub label: String,
}

impl SourcedKey {
    /// The top-level section the number belongs to (`tlb`, `slab`, `cpu`).
    pub fn section(&self) -> &str {
        self.path.split(['.', '[']).next().unwrap_or_default()
    }
}

/// Calls `f` on every `{ value, source, confidence }` table under `v`, in document order.
pub fn for_each_sourced(v: &mut toml::Value, f: &mut dyn FnMut(&SourcedKey, &mut toml::Table)) {
    walk(v, &SourcedKey { path: String::new(), label: String::new() }, f);
}

fn walk(v: &mut toml::Value, at: &SourcedKey, f: &mut dyn FnMut(&SourcedKey, &mut toml::Table)) {
    let join = |base: &str, k: &str| if base.is_empty() { k.to_string() } else { format!("{base}.{k}") };
    match v {
        toml::Value::Table(t) if t.contains_key("value") && t.contains_key("source") => f(at, t),
        toml::Value::Table(t) => {
            for (k, x) in t.iter_mut() {
                walk(x, &SourcedKey { path: join(&at.path, k), label: join(&at.label, k) }, f);
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter_mut().enumerate() {
                let tag = x.get("name").and_then(|n| n.as_str()).map_or(i.to_string(), str::to_string);
                walk(
                    x,
                    &SourcedKey { path: format!("{}[{i}]", at.path), label: format!("{}[{tag}]", at.label) },
                    f,
                );
            }
        }
        _ => {}
    }
}

/// A sourced number's value (integer or float) in its table.
pub fn sourced_value(t: &toml::Table) -> Option<f64> {
    t.get("value").and_then(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
}

impl MachineProfile {
    /// Every sourced number: its key, value and whether it was measured (`confidence =
    /// "measured"`).
    pub fn sourced(&self) -> Vec<(SourcedKey, f64, bool)> {
        let mut out = Vec::new();
        if let Ok(mut v) = toml::Value::try_from(self) {
            for_each_sourced(&mut v, &mut |k, t| {
                if let Some(x) = sourced_value(t) {
                    let measured = t.get("confidence").and_then(|c| c.as_str()) == Some("measured");
                    out.push((k.clone(), x, measured));
                }
            });
        }
        out
    }

    /// The profile with `f` applied to every sourced number's table (a new value, source or
    /// confidence); an error if the result is no longer a profile.
    pub fn map_sourced(
        &self,
        f: &mut dyn FnMut(&SourcedKey, &mut toml::Table),
    ) -> Result<MachineProfile, String> {
        let mut v = toml::Value::try_from(self).map_err(|e| e.to_string())?;
        for_each_sourced(&mut v, f);
        v.try_into().map_err(|e: toml::de::Error| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_name_array_elements_by_index_and_by_name() {
        let p = crate::profile::shipped("haswell-ep-2s");
        let all = p.sourced();
        let clock = all.iter().find(|(k, _, _)| k.path == "cpu.clock_mhz").expect("the clock is sourced");
        assert_eq!(clock.0.section(), "cpu");
        assert!(clock.1 > 1000.0);
        let tlb = all.iter().find(|(k, _, _)| k.path.starts_with("tlb.structure[0].")).expect("a TLB number");
        assert!(
            tlb.0.label.starts_with("tlb.structure[") && !tlb.0.label.starts_with("tlb.structure[0]"),
            "{:?}",
            tlb.0
        );
        assert_eq!(tlb.0.section(), "tlb");
    }

    #[test]
    fn a_mapped_profile_carries_the_change_and_nothing_else() {
        let p = crate::profile::shipped("haswell-ep-2s");
        let q = p
            .map_sourced(&mut |k, t| {
                if k.path == "cpu.clock_mhz" {
                    t.insert("value".into(), toml::Value::Float(1234.0));
                }
            })
            .unwrap();
        assert_eq!(q.clock_mhz(), 1234);
        let (a, b) = (p.sourced(), q.sourced());
        assert_eq!(a.len(), b.len());
        let changed: Vec<_> =
            a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0.path.clone()).collect();
        assert_eq!(changed, ["cpu.clock_mhz"]);
    }
}
