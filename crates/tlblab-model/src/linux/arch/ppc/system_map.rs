//! Text layouts as data: what a `System.map` (kernel) or `nm` of a program and its libc (user)
//! would give — functions with address and size — plus the ordered function lists of the code
//! paths a workload runs, and the observations a layout is checked against (the seed's I-TLB
//! dumps). No System.map of the seed-003 builds exists (docs/references/seeds-001-003-004.md#layout-data), so
//! the files under
//! `layouts/` place functions by each version's link order with estimated sizes and say so per
//! function (`confidence`).
//!
//! This module parses a layout from a string (the CLI reads the file) and answers the questions
//! the I-TLB model needs: which 4 KB text pages and which 16-byte I-cache lines a path fetches,
//! and how that compares with a dump.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Layout file schema version this build reads.
pub const LAYOUT_SCHEMA: u32 = 1;
/// Where ppc32 Linux puts kernel text (`KERNELBASE`); user text lies below 0x80000000.
pub const KERNEL_SPACE: u64 = 0x8000_0000;

const CONFIDENCES: [&str; 4] = ["dump-anchored", "link-order-estimate", "dump-only", "source"];
const SPACES: [&str; 2] = ["kernel", "user"];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Function {
    pub name: String,
    /// Source file (or library) it comes from.
    pub file: String,
    pub addr: u64,
    pub size: u64,
    /// `kernel` or `user`.
    pub space: String,
    /// `dump-anchored`: placed on a page the seed's dump shows, by inference; `link-order-
    /// estimate`: placed by link order with an estimated size; `dump-only`: a page the dump shows
    /// whose function is not identified; `source`: address and size known.
    pub confidence: String,
    #[serde(default)]
    pub note: String,
}

impl Function {
    pub fn end(&self) -> u64 {
        self.addr + self.size
    }

    pub fn is_kernel(&self) -> bool {
        self.space == "kernel"
    }
}

/// An ordered list of functions a code path executes (each once, start to end).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Path {
    pub name: String,
    #[serde(default)]
    pub note: String,
    pub steps: Vec<String>,
}

/// Text pages an observation saw one path add to the I-TLB.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dump {
    /// The paths that ran between the two dumps (user and kernel).
    pub paths: Vec<String>,
    pub source: String,
    pub kernel_pages: Vec<u64>,
    pub user_pages: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayout {
    schema_version: u32,
    name: String,
    kernel: String,
    description: String,
    size_rule: String,
    #[serde(rename = "function", default)]
    functions: Vec<Function>,
    #[serde(rename = "path", default)]
    paths: Vec<Path>,
    #[serde(rename = "dump", default)]
    dumps: Vec<Dump>,
}

/// A validated layout.
#[derive(Debug, Clone)]
pub struct TextLayout {
    pub name: String,
    /// Kernel version the layout describes (`2.4`, `2.6`).
    pub kernel: String,
    pub description: String,
    /// How sizes were estimated.
    pub size_rule: String,
    functions: Vec<Function>,
    by_name: BTreeMap<String, usize>,
    paths: Vec<Path>,
    dumps: Vec<Dump>,
}

/// A bad layout: the file, the key and what was expected, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

/// The pages and lines one path fetches, in first-touch order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Footprint {
    pub kernel_pages: Vec<u64>,
    pub user_pages: Vec<u64>,
    /// Distinct 16-byte I-cache lines.
    pub lines: usize,
    /// Bytes of text executed (sum of step sizes).
    pub bytes: u64,
}

/// How a path's pages compare with a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpCheck {
    pub modelled_kernel: BTreeSet<u64>,
    pub dumped_kernel: BTreeSet<u64>,
    pub modelled_user: BTreeSet<u64>,
    pub dumped_user: BTreeSet<u64>,
}

impl DumpCheck {
    /// Dumped pages the model never touches.
    pub fn missing(&self) -> Vec<u64> {
        self.dumped_kernel
            .difference(&self.modelled_kernel)
            .chain(self.dumped_user.difference(&self.modelled_user))
            .copied()
            .collect()
    }
}

impl TextLayout {
    /// Parse and validate `text`; `file` names the source in errors.
    pub fn parse(file: &str, text: &str) -> Result<TextLayout, LayoutError> {
        Self::parse_raw(file, text).map_err(|e| LayoutError(crate::toml_error::one_line(e.0)))
    }

    fn parse_raw(file: &str, text: &str) -> Result<TextLayout, LayoutError> {
        let raw: RawLayout =
            toml::from_str(text).map_err(|e| LayoutError(format!("{file}: {}", one_line(&e.to_string()))))?;
        let err = |m: String| Err(LayoutError(format!("{file}: {m}")));
        if raw.schema_version != LAYOUT_SCHEMA {
            return err(format!("schema_version = {}: this build reads {LAYOUT_SCHEMA}", raw.schema_version));
        }
        let mut by_name = BTreeMap::new();
        for (i, f) in raw.functions.iter().enumerate() {
            let key = format!("function[{i}] ({})", f.name);
            if !SPACES.contains(&f.space.as_str()) {
                return err(format!("{key}.space = {:?}: allowed values are {SPACES:?}", f.space));
            }
            if !CONFIDENCES.contains(&f.confidence.as_str()) {
                return err(format!(
                    "{key}.confidence = {:?}: allowed values are {CONFIDENCES:?}",
                    f.confidence
                ));
            }
            if f.size == 0 || f.size % 4 != 0 || f.addr % 4 != 0 {
                return err(format!(
                    "{key}: addr {:#x} and size {:#x} must be multiples of 4 (ppc instructions), size > 0",
                    f.addr, f.size
                ));
            }
            if (f.space == "kernel") != (f.addr >= KERNEL_SPACE) || f.end() > 1 << 32 {
                return err(format!(
                    "{key}.addr = {:#x}: kernel text lies at or above {KERNEL_SPACE:#x}, user text below",
                    f.addr
                ));
            }
            if by_name.insert(f.name.clone(), i).is_some() {
                return err(format!("{key}.name: defined twice"));
            }
        }
        let mut sorted: Vec<&Function> = raw.functions.iter().collect();
        sorted.sort_by_key(|f| f.addr);
        for w in sorted.windows(2) {
            if w[0].end() > w[1].addr {
                return err(format!(
                    "function {} [{:#x}, {:#x}) overlaps {} at {:#x}",
                    w[0].name,
                    w[0].addr,
                    w[0].end(),
                    w[1].name,
                    w[1].addr
                ));
            }
        }
        let mut path_names = BTreeSet::new();
        for (i, p) in raw.paths.iter().enumerate() {
            if !path_names.insert(p.name.clone()) {
                return err(format!("path[{i}].name = {:?}: defined twice", p.name));
            }
            if p.steps.is_empty() {
                return err(format!("path[{i}] ({}).steps: empty", p.name));
            }
            for s in &p.steps {
                if !by_name.contains_key(s) {
                    return err(format!(
                        "path[{i}] ({}).steps: unknown function {s:?} (not a [[function]] of this file)",
                        p.name
                    ));
                }
            }
        }
        for (i, d) in raw.dumps.iter().enumerate() {
            if let Some(bad) = d.paths.iter().find(|p| !path_names.contains(*p)) {
                let known: Vec<&String> = path_names.iter().collect();
                return err(format!("dump[{i}].paths: {bad:?} is not a path; allowed values are {known:?}"));
            }
            if d.kernel_pages.iter().chain(&d.user_pages).any(|p| p % 4096 != 0) {
                return err(format!("dump[{i}]: pages must be 4 KB aligned addresses"));
            }
        }
        Ok(TextLayout {
            name: raw.name,
            kernel: raw.kernel,
            description: raw.description,
            size_rule: raw.size_rule,
            functions: raw.functions,
            by_name,
            paths: raw.paths,
            dumps: raw.dumps,
        })
    }

    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    pub fn function(&self, name: &str) -> Option<&Function> {
        self.by_name.get(name).map(|&i| &self.functions[i])
    }

    pub fn paths(&self) -> &[Path] {
        &self.paths
    }

    pub fn path(&self, name: &str) -> Option<&Path> {
        self.paths.iter().find(|p| p.name == name)
    }

    pub fn dumps(&self) -> &[Dump] {
        &self.dumps
    }

    /// The functions of a path, in order.
    pub fn steps(&self, path: &str) -> Option<Vec<&Function>> {
        let p = self.path(path)?;
        Some(p.steps.iter().map(|s| self.function(s).expect("validated")).collect())
    }

    /// Pages and lines the given paths fetch, in the order given.
    pub fn footprint<'a>(&self, paths: impl IntoIterator<Item = &'a str>) -> Option<Footprint> {
        let mut fp = Footprint::default();
        let mut seen = BTreeSet::new();
        let mut lines = BTreeSet::new();
        for p in paths {
            for f in self.steps(p)? {
                fp.bytes += f.size;
                for l in (f.addr & !15..f.end()).step_by(16) {
                    lines.insert(l);
                }
                for page in (f.addr & !0xfff..f.end()).step_by(4096) {
                    if seen.insert(page) {
                        if page >= KERNEL_SPACE {
                            fp.kernel_pages.push(page);
                        } else {
                            fp.user_pages.push(page);
                        }
                    }
                }
            }
        }
        fp.lines = lines.len();
        Some(fp)
    }

    /// The hot kernel functions of `paths` moved together, in first-use order, into a new region
    /// after the kernel's last function (as a linker's hot-text section would place them, page
    /// aligned): the fewest distinct 4 KB pages those functions can take. Cold functions, user
    /// text and the dumps stay as they are; the seed's question ("bring the hotpath functions into
    /// the same pages"). Errors name an unknown path.
    pub fn hot_ordered(&self, paths: &[&str]) -> Result<TextLayout, LayoutError> {
        let mut hot: Vec<usize> = Vec::new();
        for p in paths {
            let Some(path) = self.path(p) else {
                let known: Vec<&str> = self.paths.iter().map(|p| p.name.as_str()).collect();
                return Err(LayoutError(format!(
                    "layout {}: no path {p:?}; paths: {}",
                    self.name,
                    known.join(", ")
                )));
            };
            for s in &path.steps {
                let i = self.by_name[s];
                if self.functions[i].is_kernel() && !hot.contains(&i) {
                    hot.push(i);
                }
            }
        }
        let end =
            self.functions.iter().filter(|f| f.is_kernel()).map(Function::end).max().unwrap_or(KERNEL_SPACE);
        let mut at = (end + 0xfff) & !0xfff;
        let mut out = self.clone();
        out.name = format!("{}-hot", self.name);
        for i in hot {
            let f = &mut out.functions[i];
            // Keep each function's offset within a 16-byte line, so its I-cache lines stay as many.
            at = (at & !15) + (f.addr & 15);
            f.addr = at;
            f.note = format!("moved by hot_ordered (was {:#x})", self.functions[i].addr);
            at = f.end().next_multiple_of(16);
        }
        Ok(out)
    }

    /// `name`'s text moved to the first free 16-byte line after `anchor` on `anchor`'s last page
    /// (where a compiler would put a function inlined into its caller: in the caller's text),
    /// its size kept. Errors name the function and say when the page has no room.
    pub fn moved_beside(&self, name: &str, anchor: &str) -> Result<TextLayout, LayoutError> {
        let lookup = |n: &str| {
            self.by_name.get(n).copied().ok_or_else(|| {
                LayoutError(format!("layout {}: no function {n:?} to move or to move beside", self.name))
            })
        };
        let (i, a) = (lookup(name)?, lookup(anchor)?);
        let f = &self.functions[i];
        let mut at = self.functions[a].end().next_multiple_of(16) + (f.addr & 15);
        let page_end = (self.functions[a].end() - 1) | 0xfff;
        // Past any function already there (other than the one moving).
        while let Some(o) =
            self.functions.iter().enumerate().find(|&(j, o)| j != i && o.addr < at + f.size && at < o.end())
        {
            at = o.1.end().next_multiple_of(16) + (f.addr & 15);
        }
        if at + f.size - 1 > page_end {
            return Err(LayoutError(format!(
                "layout {}: no room for {name} ({:#x} bytes) on {anchor}'s page {:#x}",
                self.name,
                f.size,
                page_end & !0xfff
            )));
        }
        let mut out = self.clone();
        out.name = format!("{}-{name}-beside-{anchor}", self.name);
        out.functions[i].addr = at;
        out.functions[i].note = format!("moved beside {anchor} (was {:#x})", f.addr);
        Ok(out)
    }

    /// Compare the pages of `dump.paths` with what the dump saw.
    pub fn check(&self, dump: &Dump) -> DumpCheck {
        let fp = self.footprint(dump.paths.iter().map(String::as_str)).expect("validated");
        DumpCheck {
            modelled_kernel: fp.kernel_pages.into_iter().collect(),
            dumped_kernel: dump.kernel_pages.iter().copied().collect(),
            modelled_user: fp.user_pages.into_iter().collect(),
            dumped_user: dump.user_pages.iter().copied().collect(),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
