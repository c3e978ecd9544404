//! Not a Linux file: TOML parse errors as one line naming the file, line, column and key.
//!
//! The `toml` crate's own rendering spans several lines (a source excerpt with a caret) and
//! names no key for a value of the wrong type; every file tlblab reads (machine profiles, kernel
//! presets, experiments) reports through here instead.

/// An error message made one line: control characters a file put in it (a key or name holding
/// a newline, carriage return or terminal escape) come out escaped (`\n`, `\u{1b}`). Every
/// parser of a user's file passes its errors through here.
pub fn one_line(message: String) -> String {
    if !message.chars().any(char::is_control) {
        return message;
    }
    let mut out = String::with_capacity(message.len() + 8);
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// `origin:LINE:COL: key `KEY`: MESSAGE` for an error `e` in `text`.
pub fn describe(origin: &str, text: &str, e: &toml::de::Error) -> String {
    one_line(describe_raw(origin, text, e))
}

fn describe_raw(origin: &str, text: &str, e: &toml::de::Error) -> String {
    let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(span) = e.span() else {
        return format!("{origin}: {message}");
    };
    let at = span.start.min(text.len());
    let before = &text[..at];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("");
    match key_of(line).map(|k| qualify(&text[..line_start], &k)) {
        Some(key) => format!("{origin}:{line_no}:{col}: key `{key}`: {message}"),
        None => format!("{origin}:{line_no}:{col}: {message}"),
    }
}

/// The key a `key = value` line sets.
fn key_of(line: &str) -> Option<String> {
    let (k, _) = line.split_once('=')?;
    let k = k.trim().trim_matches('"');
    let ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    ok.then(|| k.to_string())
}

/// `key` prefixed with the last `[table]` / `[[array]]` header above it.
fn qualify(above: &str, key: &str) -> String {
    let header = above.lines().rev().map(str::trim).find(|l| l.starts_with('['));
    match header.map(|h| h.trim_matches(|c| c == '[' || c == ']').trim()) {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            topology: Topo,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Topo {
            sockets: u32,
        }
        describe("f.toml", text, &toml::from_str::<T>(text).unwrap_err())
    }

    #[test]
    fn one_line_with_file_line_and_key() {
        let e = err("# c\n[topology]\nsockets = \"two\"\n");
        assert!(!e.contains('\n'), "{e}");
        assert!(e.starts_with("f.toml:3:11: key `topology.sockets`: "), "{e}");
        let e = err("[topology]\nsockets = -2\n");
        assert!(e.contains("key `topology.sockets`") && e.contains("u32"), "{e}");
        let e = err("[topology]\nsockets = { value = 1");
        assert!(e.starts_with("f.toml:2:") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn control_characters_come_out_escaped() {
        assert_eq!(one_line("unknown key `a\nb\u{1b}[2J`".into()), r"unknown key `a\nb\u{1b}[2J`");
        assert_eq!(one_line("plain `é`".into()), "plain `é`");
    }
}
