//! The blocks under the metric (`[[table.block]]`): counters per operation as data, and the
//! two derived blocks no data row can express.

use super::spec::{apply_format, Block, Divisor, Form, PerOp};
use super::{cell, kernel_line, per_op, style, width, Heading};
use crate::summary::{Row, Summary};

/// A value of `p` in the cell `r`.
fn value(p: &PerOp, r: &Row) -> f64 {
    let sum = |names: Vec<&str>| names.into_iter().fold(0.0, |a, n| a + per_op(r, n));
    let mut v = p.scale * sum(p.counter.list());
    if p.per_second {
        v *= r.ops_per_second;
    }
    match &p.divide_by {
        None => v,
        Some(Divisor::Number(d)) => v / d,
        Some(Divisor::Counters(n)) => v / sum(n.list()).max(1e-12),
    }
}

/// The values of `b` in one cell, each after its separator (none before the first).
fn joined(b: &Block, r: &Row, default_sep: &str) -> String {
    let mut out = String::new();
    for (i, p) in b.per_op.iter().enumerate() {
        if i > 0 {
            out += p.sep.as_deref().unwrap_or(default_sep);
        }
        out += &apply_format(&p.format, value(p, r));
    }
    out
}

/// The title and the labels of the values, for blocks that pack them.
fn legend(b: &Block) -> String {
    let labels: Vec<&str> = b.per_op.iter().map(|p| p.label.as_str()).filter(|l| !l.is_empty()).collect();
    format!("\n{}: {}\n", b.title, labels.join(" / "))
}

/// One block. Lines and derived blocks show the table's first row (their tables have one).
pub fn render(b: &Block, e: &Heading, s: &Summary) -> String {
    let first = e.rows.first().copied().unwrap_or(1);
    match b.form {
        Form::Packed => {
            let w = width(s, b.width);
            let pad = b.pad;
            let mut out = legend(b);
            let mut head = format!("{:<pad$}", e.table.rows);
            for k in &s.kernels {
                head += &format!(" {k:>w$}");
            }
            out += &format!("{}\n", head.trim_end());
            for &t in e.rows {
                let mut line = format!("{t:<pad$}");
                for k in &s.kernels {
                    line += &format!(" {:>w$}", joined(b, cell(s, k, t), "/"));
                }
                out += &format!("{line}\n");
            }
            out
        }
        Form::KernelRows => {
            let (pad, w) = (b.pad, b.width);
            let mut out = legend(b);
            for &t in e.rows {
                for (i, k) in s.kernels.iter().enumerate() {
                    let row = if i == 0 { t.to_string() } else { String::new() };
                    out += &format!("{row:<pad$}{k:<w$} {}\n", joined(b, cell(s, k, t), " / "));
                }
            }
            out
        }
        Form::Lines => {
            let w = width(s, b.width);
            let mut out = format!("\n{}\n", b.title);
            for p in &b.per_op {
                out += &kernel_line(s, &p.label, b.pad, w, &|k| {
                    let r = cell(s, k, first);
                    let v = value(p, r);
                    let txt = apply_format(&p.format, v);
                    if b.share_of.is_empty() {
                        return txt;
                    }
                    let total = b.share_of.iter().fold(0.0, |a, n| a + per_op(r, n)).max(1.0);
                    format!("{txt} ({:.1}%)", 100.0 * v / total)
                });
            }
            out
        }
        Form::CpuTimeShares => {
            let w = width(s, b.width);
            let mut out = format!("\n{}\n", b.title);
            let buckets: Vec<&String> = cell(s, &s.kernels[0], first).attribution_ps.keys().collect();
            for bucket in buckets {
                out += &kernel_line(s, bucket, b.pad, w, &|k| {
                    let a = &cell(s, k, first).attribution_ps;
                    let total: f64 = a.values().sum();
                    format!("{:.1}%", 100.0 * a.get(bucket).copied().unwrap_or(0.0) / total.max(1e-12))
                });
            }
            out
        }
        Form::ClockParts => {
            format!("\n{}\n", b.title) + &style::clock_parts(s, first, b.pad, width(s, b.width))
        }
    }
}
