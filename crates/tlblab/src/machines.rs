//! Machine profiles: the built-in ones (every `profiles/*.toml`, `tlblab_model::builtin`) and
//! profile files given by path.

use anyhow::{anyhow, Result};
use std::path::Path;
use tlblab_model::profile::MachineProfile;
use tlblab_model::toml_error::one_line;

use tlblab_model::builtin::PROFILES as BUILTIN;

/// Names of the built-in profiles, sorted.
pub fn builtin_names() -> Vec<&'static str> {
    tlblab_model::builtin::names(BUILTIN)
}

/// Parses and validates profile text; `origin` names the file in every error.
pub fn parse(text: &str, origin: &str) -> Result<MachineProfile> {
    let p: MachineProfile =
        toml::from_str(text).map_err(|e| anyhow!(tlblab_model::toml_error::describe(origin, text, &e)))?;
    p.validate().map_err(|e| anyhow!(one_line(format!("{origin}: {e}"))))?;
    Ok(p)
}

/// `NAME` of a built-in profile, or a path to a profile file.
pub fn load(arg: &str) -> Result<MachineProfile> {
    let path = Path::new(arg);
    if arg.ends_with(".toml") || arg.contains('/') || path.is_file() {
        let text = crate::input::read_text(path, "machine profile", crate::input::TEXT_LIMIT)?;
        return parse(&text, &path.display().to_string());
    }
    let (name, text) = BUILTIN.iter().find(|(n, _)| *n == arg).ok_or_else(|| {
        anyhow!(
            "unknown machine `{arg}`; built-in machines: {} (or give a path to a .toml profile)",
            builtin_names().join(", ")
        )
    })?;
    parse(text, &format!("built-in profile {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_loads() {
        assert!(BUILTIN.len() >= 5);
        for name in builtin_names() {
            let p = load(name).unwrap();
            assert_eq!(p.name, name);
        }
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let e = load("pentium-pro").unwrap_err().to_string();
        assert!(e.contains("unknown machine `pentium-pro`") && e.contains("ivybridge-4c8t"), "{e}");
    }

    #[test]
    fn errors_name_the_file() {
        let e = parse("schema_version = 1\n", "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml:") && e.contains("missing field"), "{e}");
    }
}
