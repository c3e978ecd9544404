//! The seed reproductions' own tables, drawn from each experiment's `[table]` ([`spec`]): the
//! metric in the layout of the tool the seed thread quotes ([`style`]), then the counters per
//! operation its argument rests on ([`blocks`]), the thread's published figures beside the
//! model's ([`mod@reference`]) and the experiment's short note. Text only; the CLI prints it and
//! the HTML report repeats it.

pub mod blocks;
pub mod reference;
pub mod spec;
pub mod style;

pub use reference::{RefPoint, Reference};
pub use spec::TableSpec;

use crate::summary::{Row, Summary};

/// One column of the table: its label and the heading over a group of columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub label: String,
    /// A heading over several columns (e.g. "early return"); may be empty.
    pub group: String,
}

/// What the table shows beside the summary.
#[derive(Debug, Clone)]
pub struct Heading<'a> {
    pub table: &'a TableSpec,
    pub title: &'a str,
    /// What the experiment reproduces: `seed thread 001`, or the kernel change it measures.
    pub origin: &'a str,
    pub columns: &'a [Column],
    /// The table's rows (thread counts, message sizes or groups), in order.
    pub rows: &'a [u32],
    pub note: &'a str,
    pub reference: Option<&'a Reference>,
}

/// The whole table: the style's metric block, each `[[table.block]]`, the style's closing
/// line, the published figures and the note.
pub fn render(e: &Heading, s: &Summary) -> String {
    let t = e.table;
    let mut out = style::opening(e, s);
    for b in &t.blocks {
        out += &blocks::render(b, e, s);
    }
    out += &style::closing(e, s);
    if let Some(r) = e.reference {
        let rows = t.reference_rows.as_deref().unwrap_or(&t.rows);
        out += &reference::render_reference(r, s, rows);
    }
    if !e.note.is_empty() {
        out += &format!("\nNote: {}\n", e.note.trim());
    }
    out
}

/// The summary row of kernel `k` at row `t`.
fn cell<'s>(s: &'s Summary, k: &str, t: u32) -> &'s Row {
    s.rows.iter().find(|r| r.kernel == k && r.threads == t).expect("a row per kernel and table row")
}

/// A counter per operation of a cell; absent where the run's machine has no such subsystem
/// (names are checked against the model's at load).
fn per_op(r: &Row, name: &str) -> f64 {
    r.counters_per_op.get(name).copied().unwrap_or(0.0)
}

/// The first line of every table.
fn title_line(e: &Heading, s: &Summary) -> String {
    format!("{} ({}, {})\n", e.title, s.experiment, e.origin)
}

/// The two heading lines over the kernel columns: each column's group, then its label as
/// `label` shows it; the first `pad` characters hold `corner.0` and `corner.1`.
fn column_heads(
    e: &Heading,
    corner: (&str, &str),
    pad: usize,
    w: usize,
    label: impl Fn(&Column) -> String,
) -> String {
    let mut groups = format!("{:<pad$}", corner.0);
    let mut labels = format!("{:<pad$}", corner.1);
    for k in e.columns {
        groups += &format!(" {:>w$}", k.group);
        labels += &format!(" {:>w$}", label(k));
    }
    format!("{}\n{}\n", groups.trim_end(), labels.trim_end())
}

/// One line: `label` in `pad` characters, then `f` of each kernel right-aligned in `w`.
fn kernel_line(s: &Summary, label: &str, pad: usize, w: usize, f: &dyn Fn(&str) -> String) -> String {
    let mut line = format!("{label:<pad$}");
    for k in &s.kernels {
        line += &format!(" {:>w$}", f(k));
    }
    line + "\n"
}

/// The widest column label, at least `min`.
fn width(s: &Summary, min: usize) -> usize {
    s.kernels.iter().map(|k| k.len()).max().unwrap_or(8).max(min)
}
