//! Every document the repository cites must be in the repository: a reader of a clone follows
//! each `*.md` path (and its `#anchor`, a GitHub heading slug) and each `docs/...` path. Names of
//! documents that live outside it (the old design and fact sheets, issue numbers) are refused.

use std::path::{Path, PathBuf};

/// What is scanned: source, data and documentation.
const SCANNED: &[&str] = &[
    "crates",
    "profiles",
    "kernels",
    "layouts",
    "experiments",
    "scripts",
    "docs",
    "examples",
    "fuzz",
    "README.md",
];
const EXTENSIONS: &[&str] = &["rs", "toml", "md", "py", "pyi", "sh"];
const SKIPPED_DIRS: &[&str] = &["target", "corpus", "__pycache__", ".venv", "node_modules"];
/// This file: its tests spell out what is refused.
const SELF: &str = "crates/tlblab/tests/citations.rs";

/// Documents outside the repository, by the names comments used for them.
const BANNED: &[&str] = &[
    "DESIGN.md",
    "facts sheet",
    "fact sheet",
    "wave2-facts",
    "linux-mm-facts",
    "fidelity audit",
    "fidelity-audit",
    "shared/reference",
    "/work/shared",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code fences).
fn anchors(text: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// `issue 12`, `Issues 18`, `issue #3`, and in a name `..._issue_18_...`.
fn cites_issue(line: &str) -> bool {
    let lower = line.to_lowercase();
    lower.match_indices("issue").any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let rest = lower[i + 5..].strip_prefix('s').unwrap_or(&lower[i + 5..]);
        let rest = rest.strip_prefix([' ', '_']).map(|r| r.strip_prefix('#').unwrap_or(r));
        !before.is_some_and(|c| c.is_alphanumeric())
            && rest.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The cited paths of one line: `*.md` paths with their anchor, and `docs/...` paths.
fn cited(line: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices(".md") {
        let after = &line[i + 3..];
        if after.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue;
        }
        let start = line[..i].char_indices().rev().take_while(|&(_, c)| path_char(c)).last().map(|(j, _)| j);
        let Some(start) = start else { continue };
        if line[..start].ends_with("://") || line[..start].ends_with(':') {
            continue;
        }
        let anchor = after.strip_prefix('#').map(|a| {
            a.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).collect::<String>()
        });
        out.push((line[start..i + 3].to_string(), anchor.filter(|a| !a.is_empty())));
    }
    for (i, _) in line.match_indices("docs/") {
        if line[..i].chars().next_back().is_some_and(path_char) {
            continue;
        }
        let path: String = line[i..].chars().take_while(|&c| path_char(c)).collect();
        let path = path.trim_end_matches('.');
        if !path.contains(".md") {
            out.push((path.to_string(), None));
        }
    }
    out
}

/// The problems of one file's text, as `file:line: why`. `dir` is the file's folder.
fn problems(rel: &str, dir: &Path, text: &str, root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = format!("{rel}:{}", n + 1);
        for name in BANNED {
            if line.contains(name) {
                out.push(format!("{at}: cites `{name}`, which is not in the repository"));
            }
        }
        for (i, _) in line.match_indices("machine-costs.md") {
            if !line[..i].ends_with("docs/references/") {
                out.push(format!("{at}: cites `machine-costs.md`; say `docs/references/machine-costs.md`"));
            }
        }
        if cites_issue(line) {
            out.push(format!("{at}: cites an issue number; say what was decided"));
        }
        for (path, anchor) in cited(line) {
            let found = std::iter::once(root.to_path_buf())
                .chain(dir.ancestors().take_while(|a| a.starts_with(root)).map(Path::to_path_buf))
                .map(|base| base.join(&path))
                .find(|p| p.exists());
            let Some(file) = found else {
                out.push(format!("{at}: cites `{path}`, which does not exist"));
                continue;
            };
            if let Some(anchor) = anchor {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&text).contains(&anchor) {
                    out.push(format!("{at}: cites `{path}#{anchor}`, a heading {path} does not have"));
                }
            }
        }
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_str()) {
                walk(&p, files);
            }
        } else if p.extension().is_some_and(|e| EXTENSIONS.contains(&e.to_string_lossy().as_ref())) {
            files.push(p);
        }
    }
}

/// Every file of [`SCANNED`] with one of [`EXTENSIONS`], in order.
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for top in SCANNED {
        let p = root.join(top);
        if p.is_file() {
            files.push(p);
        } else {
            walk(&p, &mut files);
        }
    }
    files
}

#[test]
fn every_cited_document_is_in_the_repository() {
    let root = root();
    let files = scanned_files(&root);
    let mut bad = Vec::new();
    let mut scanned = 0;
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        if rel == SELF {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        scanned += 1;
        bad.extend(problems(&rel, f.parent().unwrap(), &text, &root));
    }
    assert!(scanned > 300, "only {scanned} files scanned: is the root right?");
    assert!(bad.is_empty(), "{} citations do not resolve:\n{}", bad.len(), bad.join("\n"));
}

/// A merge's conflict markers left in a file: `<<<<<<< `, a lone `=======`, `>>>>>>> `.
fn conflict_markers(rel: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || *l == "=======")
        .map(|(i, _)| format!("{rel}:{}: a merge conflict marker", i + 1))
        .collect()
}

#[test]
fn no_file_keeps_a_merge_conflict_marker() {
    let root = root();
    let files = scanned_files(&root);
    let bad: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            std::fs::read_to_string(f).ok().map(|t| conflict_markers(&rel, &t))
        })
        .flatten()
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let left = "text\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n";
    assert_eq!(conflict_markers("x.md", left).len(), 3);
}

#[test]
fn a_citation_of_a_missing_file_anchor_or_outside_document_fails_naming_its_line() {
    let root = root();
    let dir = root.join("crates/tlblab/src");
    let text = "fine: docs/design.md#engine and docs/references/linux-mm.md#flush_tlb_func\n\
                see docs/nowhere.md and docs/design.md#no-such-heading\n\
                as DESIGN.md rule 3 says, and machine-costs.md G1\n\
                decided in Issue 14; a workload issues syscalls (not a citation)\n\
                the folder docs/no-such-folder/ and ../../README.md";
    let got = problems("x.rs", &dir, text, &root);
    let lines: Vec<&str> = got.iter().map(|p| p.split(": ").next().unwrap()).collect();
    // Line 3 four times: each outside name is refused, and neither file exists here.
    let want = ["x.rs:2", "x.rs:2", "x.rs:3", "x.rs:3", "x.rs:3", "x.rs:3", "x.rs:4", "x.rs:5"];
    assert_eq!(lines, want, "{got:#?}");
    assert!(got[0].contains("docs/nowhere.md") && got[1].contains("#no-such-heading"), "{got:#?}");
    assert!(got[6].contains("issue number") && got[7].contains("docs/no-such-folder/"), "{got:#?}");
    assert_eq!(slug(" zone->lock calibration"), "zone-lock-calibration");
    assert_eq!(slug("SWAP_CLUSTER_MAX 256"), "swap_cluster_max-256");
}

#[test]
fn the_issue_pattern_catches_prose_and_names() {
    for cited in ["see issue 12", "Issues 18 and 19", "(issue #3)", "fn takes_what_issue_18_allows()"] {
        assert!(cites_issue(cited), "{cited}");
    }
    for clean in ["no issue here", "tissue 12", "issue_count", "the issue: 4 CPUs"] {
        assert!(!cites_issue(clean), "{clean}");
    }
}
