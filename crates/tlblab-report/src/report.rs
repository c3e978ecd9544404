//! Whole reports: an HTML page plus the plot files it shows. [`Report`] is the generic builder
//! (any text, table, line chart or stacked bars); [`experiment`], [`comparison`] and [`sweep`]
//! lay out the three standard pages. The caller writes [`Report::files`] into a directory.

use std::collections::BTreeMap;
use tlblab_model::attribution::Bucket;

use crate::compare::{fmt_value, Comparison};
use crate::html::{Block, Page};
use crate::plot::{svg_to_png, LineChart, Point, Series, StackedBars};
use crate::seed_table::RefPoint;
use crate::summary::{slug, ResultSet};
use crate::sweep::{self as grid, Grid};

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub page: Page,
    /// (file stem under `plots/`, SVG text).
    pub plots: Vec<(String, String)>,
}

impl Report {
    pub fn new(title: impl Into<String>) -> Report {
        Report { page: Page::new(title), plots: Vec::new() }
    }

    /// A plot block for `svg`, saved as `plots/<stem>.svg` and `.png`. Stems are made unique.
    pub fn plot(&mut self, stem: &str, svg: String, caption: impl Into<String>) -> Block {
        let mut stem = slug(stem);
        if self.plots.iter().any(|(s, _)| *s == stem) {
            stem = format!("{stem}-{}", self.plots.len());
        }
        // The SVG's own width (its first `width="..."`, on the <svg> element).
        let width = svg
            .split_once("width=\"")
            .and_then(|(_, rest)| rest.split('"').next()?.parse::<f64>().ok())
            .map_or(720, |w| w.round() as u32);
        self.plots.push((stem.clone(), svg));
        Block::Plot {
            src: format!("plots/{stem}.svg"),
            png: Some(format!("plots/{stem}.png")),
            caption: caption.into(),
            width,
        }
    }

    pub fn line_chart(&mut self, stem: &str, chart: &LineChart) -> Block {
        let caption = chart.title.clone();
        self.plot(stem, chart.to_svg(), caption)
    }

    pub fn stacked_bars(&mut self, stem: &str, bars: &StackedBars) -> Block {
        let caption = bars.title.clone();
        self.plot(stem, bars.to_svg(), caption)
    }

    pub fn section(&mut self, heading: impl Into<String>, blocks: Vec<Block>) {
        self.page.section(heading, blocks);
    }

    /// Every file of the report, relative to its directory: `index.html`, `plots/*.svg`,
    /// `plots/*.png`.
    pub fn files(&self) -> Result<Vec<(String, Vec<u8>)>, String> {
        let mut out = vec![("index.html".to_string(), self.page.render().into_bytes())];
        for (stem, svg) in &self.plots {
            out.push((format!("plots/{stem}.svg"), svg.clone().into_bytes()));
            out.push((
                format!("plots/{stem}.png"),
                svg_to_png(svg).map_err(|e| format!("plot {stem}: {e}"))?,
            ));
        }
        Ok(out)
    }
}

/// The metric against thread count, one series per column, error bars of one stddev.
pub fn metric_chart(title: &str, cmp: &Comparison, series_names: &[String], y_label: &str) -> LineChart {
    let series = cmp
        .columns
        .iter()
        .zip(series_names)
        .map(|(c, name)| Series {
            name: name.clone(),
            points: cmp
                .ops
                .iter()
                .filter_map(|op| {
                    let x = c.samples.get(op)?;
                    let t: f64 = op.parse().ok()?;
                    let sd = crate::stats::stddev(x);
                    Some(Point { x: t, y: crate::stats::mean(x), err: if sd.is_nan() { 0.0 } else { sd } })
                })
                .collect(),
        })
        .collect();
    LineChart {
        title: title.into(),
        x_label: cmp.op_name.clone(),
        y_label: y_label.into(),
        series,
        x_ticks: None,
        y_from_zero: true,
        references: Vec::new(),
    }
}

/// The seed's figures as reference series of `chart` (one per column the seed gives, in that
/// column's colour), and a table of each figure beside the model's with the difference.
fn reference_blocks(chart: &mut LineChart, kernels: &[String], reference: &[RefPoint]) -> Vec<Block> {
    for (i, k) in kernels.iter().enumerate() {
        let points: Vec<Point> = reference
            .iter()
            .filter(|p| &p.kernel == k)
            .map(|p| Point { x: f64::from(p.threads), y: p.published, err: 0.0 })
            .collect();
        if !points.is_empty() {
            chart.references.push((i, Series { name: format!("seed: {k}"), points }));
        }
    }
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.1}%"));
    let rows = reference
        .iter()
        .map(|p| {
            vec![
                p.kernel.clone(),
                if p.model_threads == p.threads {
                    p.threads.to_string()
                } else {
                    format!("{} (model {})", p.threads, p.model_threads)
                },
                fmt_value(p.published),
                fmt_value(p.model),
                format!("{:+.1}%", p.difference_pct),
                pct(p.published_gain_pct),
                pct(p.model_gain_pct),
            ]
        })
        .collect();
    let header = ["column", "at", "seed", "model", "model vs seed", "seed gain", "model gain"]
        .map(String::from)
        .to_vec();
    vec![
        Block::Paragraph(
            "The seed's published figures (the experiment's [reference]: shown, never an input),              beside the model's mean (Hmean where the table uses it) at the same point; gains are              over the first column, positive = better."
                .into(),
        ),
        Block::Table { header, rows },
    ]
}

const ATTRIBUTION_NOTE: &str = "Share of the busy CPUs' simulated time by what they were doing, summed over \
     the CPUs that ran a task and averaged over the iterations.";

/// The buckets of `per_cell` that are ever non-zero, in the model's order (user work first,
/// idle last; unknown names after), each with its fixed colour: the bucket's place in
/// `Bucket::ALL` picks it from the palette, so a bucket has one colour on every chart.
fn attribution_segments(per_cell: &[BTreeMap<String, f64>]) -> StackedBars {
    let rank = |b: &str| Bucket::ALL.iter().position(|k| k.name() == b).unwrap_or(Bucket::ALL.len());
    let mut buckets: Vec<String> = per_cell.iter().flat_map(|m| m.keys().cloned()).collect();
    buckets.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    buckets.dedup();
    buckets.retain(|b| per_cell.iter().any(|m| m.get(b).copied().unwrap_or(0.0) > 0.0));
    let mut next_unknown = Bucket::ALL.len();
    let colours = buckets
        .iter()
        .map(|b| {
            let i = match rank(b) {
                r if r < Bucket::ALL.len() => r,
                _ => {
                    next_unknown += 1;
                    next_unknown - 1
                }
            };
            crate::plot::PALETTE[i % crate::plot::PALETTE.len()].to_string()
        })
        .collect();
    StackedBars {
        y_label: "% of CPU time".into(),
        segments: buckets
            .iter()
            .map(|b| (b.clone(), per_cell.iter().map(|m| m.get(b).copied().unwrap_or(0.0)).collect()))
            .collect(),
        percent: true,
        colours,
        ..StackedBars::default()
    }
}

/// The columns' time attribution side by side in one chart: per thread count (numeric order),
/// one bar per column, labelled by the column's letter (A = the first column, ...), so a
/// patch's shift of time between buckets reads bar against bar.
fn attribution_side_by_side(r: &mut Report, columns: &[(String, &ResultSet, &str)]) -> Vec<Block> {
    let letter = |i: usize| {
        let l = (b'A' + (i % 26) as u8) as char;
        if i < 26 {
            l.to_string()
        } else {
            format!("{l}{}", i / 26)
        }
    };
    let mut threads: Vec<u32> = columns.iter().flat_map(|(_, s, _)| s.threads()).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut categories = Vec::new();
    let mut per_cell = Vec::new();
    for t in &threads {
        for (i, (_, set, kernel)) in columns.iter().enumerate() {
            if let Some(c) = set.cell(kernel, *t) {
                categories.push(format!("{t} {}", letter(i)));
                per_cell.push(c.attribution());
            }
        }
    }
    let key: Vec<String> =
        columns.iter().enumerate().map(|(i, (n, _, _))| format!("{} = {n}", letter(i))).collect();
    let bars = StackedBars {
        title: "time attribution by threads and column".into(),
        categories,
        ..attribution_segments(&per_cell)
    };
    vec![
        Block::Paragraph(format!(
            "{ATTRIBUTION_NOTE} Bars are labelled by thread count and column: {}.",
            key.join(", ")
        )),
        r.stacked_bars("attribution", &bars),
    ]
}

fn counters_blocks(cmp: &Comparison) -> Vec<Block> {
    vec![
        Block::Paragraph(
            "Event counters divided by the operations of each run, mean over the iterations.".into(),
        ),
        Block::Pre(cmp.render_counters()),
    ]
}

/// One line about a set; `columns` names what its columns are (kernels, or a sweep's
/// combinations).
fn set_paragraph(s: &ResultSet, columns: &str) -> String {
    let n: Vec<usize> = s.cells.iter().map(|c| c.runs.len()).collect();
    let violations: u64 = s.cells.iter().flat_map(|c| &c.runs).map(|r| r.oracle.violations).sum();
    format!(
        "machine {}, workload {}, metric {} in {} ({} is better); {} {columns} × {} thread count(s), \
         {}–{} iteration(s) per cell; safety oracle: {violations} violations.",
        s.machine,
        s.workload,
        s.metric.name,
        s.metric.unit,
        if s.metric.higher_is_better { "higher" } else { "lower" },
        s.kernels.len(),
        s.threads().len(),
        n.iter().min().unwrap_or(&0),
        n.iter().max().unwrap_or(&0),
    )
}

/// The page of one experiment: its table in the seed's layout (`seed_table`, as printed), the
/// model beside the seed's published figures (`reference`, from `summary.json`), the
/// mmtests-style statistics, metric vs threads, time attribution and counters.
pub fn experiment(set: &ResultSet, title: &str, seed_table: &str, reference: &[RefPoint]) -> Report {
    let mut r = Report::new(title);
    let cmp = Comparison::from_sets(&[(set.experiment.clone(), set)]);
    r.section("Setup", vec![Block::Paragraph(set_paragraph(set, "kernel(s)"))]);
    // The picture first, then the numbers behind it.
    let mut chart = metric_chart(
        &format!("{} vs threads", set.metric.name),
        &cmp,
        &set.kernels,
        &format!("{} ({})", set.metric.name, set.metric.unit),
    );
    let beside =
        if reference.is_empty() { Vec::new() } else { reference_blocks(&mut chart, &set.kernels, reference) };
    let plot = r.line_chart("metric", &chart);
    let heading = if reference.is_empty() {
        "Metric vs threads (error bars: one standard deviation)"
    } else {
        "Metric vs threads (error bars: one standard deviation; dashed, hollow: the seed's figures)"
    };
    r.section(heading, vec![plot]);
    if !beside.is_empty() {
        r.section("Model beside the seed", beside);
    }
    r.section("Table as the seed prints it", vec![Block::Pre(seed_table.to_string())]);
    stats_attribution_counters(&mut r, set, &cmp, "kernel");
    r
}

/// The page of `tlblab compare`: the statistics table of every column of every set, the metric
/// plot, attribution and counters side by side.
pub fn comparison(sets: &[(String, &ResultSet)], mode: crate::compare::Mode, all_counters: bool) -> Report {
    let cmp = Comparison::from_sets(sets).with_mode(mode).with_all_counters(all_counters);
    let names: Vec<String> = sets
        .iter()
        .flat_map(|(n, s)| {
            s.kernels.iter().map(move |k| if sets.len() > 1 { format!("{n}/{k}") } else { k.clone() })
        })
        .collect();
    let mut r = Report::new(format!(
        "tlblab compare: {}",
        sets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(" vs ")
    ));
    let setup = sets
        .iter()
        .map(|(n, s)| Block::Paragraph(format!("{n}: {}", set_paragraph(s, "kernel(s)"))))
        .collect();
    r.section("Result sets", setup);
    let m = &sets[0].1.metric;
    let chart =
        metric_chart(&format!("{} vs threads", m.name), &cmp, &names, &format!("{} ({})", m.name, m.unit));
    let plot = r.line_chart("metric", &chart);
    // Mean per cell as a plain table too, for copying.
    let mut rows = Vec::new();
    for op in &cmp.ops {
        let mut row = vec![op.clone()];
        for c in &cmp.columns {
            row.push(c.samples.get(op).map_or("-".into(), |x| fmt_value(crate::stats::mean(x))));
        }
        rows.push(row);
    }
    let header = std::iter::once(cmp.op_name.clone()).chain(names.iter().cloned()).collect();
    r.section(
        "Metric vs threads (error bars: one standard deviation)",
        vec![plot, Block::Table { header, rows }],
    );
    r.section(
        "Statistics (mmtests compare-kernels style)",
        vec![
            Block::Paragraph(format!(
                "Percentages against the first column, positive = better. {}",
                cmp.mode.describe()
            )),
            Block::Pre(cmp.render()),
        ],
    );
    r.section("Difference from the first column", delta_blocks(&cmp, &names));
    let mut cols = Vec::new();
    let mut i = 0;
    for (_, s) in sets {
        for k in &s.kernels {
            cols.push((names[i].clone(), *s, k.as_str()));
            i += 1;
        }
    }
    let blocks = attribution_side_by_side(&mut r, &cols);
    r.section("Time attribution", blocks);
    r.section("Events per operation", counters_blocks(&cmp));
    r
}

/// Per thread count and column, the mean's difference from the first column with its 95%
/// bootstrap interval and mmtests' mark: the patch's effect with its uncertainty, row by row.
fn delta_blocks(cmp: &Comparison, names: &[String]) -> Vec<Block> {
    let deltas = cmp.deltas();
    if deltas.is_empty() {
        return vec![Block::Paragraph("No column shares a thread count with the first column.".into())];
    }
    let rows = deltas
        .iter()
        .map(|d| {
            vec![
                d.op.clone(),
                names.get(d.column).cloned().unwrap_or_default(),
                format!("{:+.2}%", d.pct),
                d.ci.map_or("- (one iteration)".into(), |(lo, hi)| format!("[{lo:+.2}%, {hi:+.2}%]")),
                if d.significant { "*".into() } else { String::new() },
            ]
        })
        .collect();
    let stat = deltas[0].stat;
    vec![
        Block::Paragraph(format!(
            "{stat} of each column against {} (positive = better), with a 95% bootstrap interval \
             (2,000 seeded resamples of both columns' iterations; the same bytes every run). \
             `*`: mmtests' mark (the two columns' confidence intervals do not overlap).",
            names.first().cloned().unwrap_or_default()
        )),
        Block::Table {
            header: [cmp.op_name.as_str(), "column", "difference", "95% interval", "mark"]
                .map(String::from)
                .to_vec(),
            rows,
        },
    ]
}

/// The page of `tlblab sweep`: the table as the terminal shows it (`table`), the best
/// combination per thread count and overall, the sweep curves, metric vs threads, the mmtests
/// statistics, time attribution and counters, one column per combination of `grid`
/// (`set.kernels` are `grid.labels()`).
pub fn sweep(set: &ResultSet, grid: &Grid, title: &str, table: &str) -> Report {
    let mut r = Report::new(title);
    let cmp = Comparison::from_sets(&[(set.experiment.clone(), set)]);
    let varied: Vec<String> =
        grid.axes.iter().map(|a| format!("{} ({} values)", a.key, a.values.len())).collect();
    r.section(
        "Setup",
        vec![Block::Paragraph(format!(
            "{} Varied: {}.",
            set_paragraph(set, "combination(s)"),
            varied.join(" × ")
        ))],
    );
    r.section("Sweep table", vec![Block::Pre(table.to_string())]);

    let m = &set.metric;
    let key = grid.key();
    let (per_thread, overall) = grid::best(set, grid);
    let rows = per_thread
        .iter()
        .map(|b| {
            vec![
                b.threads.to_string(),
                grid.value(b.tied[0]),
                fmt_value(b.mean),
                b.tied[1..].iter().map(|&i| grid.value(i)).collect::<Vec<_>>().join(" "),
            ]
        })
        .collect();
    let header =
        vec!["threads".into(), format!("best {key}"), format!("{} ({})", m.name, m.unit), "tied".into()];
    let overall = match overall {
        Some((i, g)) => format!(
            "Best {key} overall: {}, at {:.1}% of each thread count's best (geometric mean over the thread counts that counted anything).",
            grid.value(i),
            100.0 * g
        ),
        None => format!("No thread count counted any {}: no best {key} overall.", m.name),
    };
    r.section(
        "Best value",
        vec![
            Block::Paragraph(format!(
                "By the mean over the iterations ({} is better); tied: the values whose 95% confidence \
                 interval (mean ± 1.96 × stddev, as mmtests) overlaps the best's, or with one iteration an \
                 equal mean.",
                if m.higher_is_better { "higher" } else { "lower" }
            )),
            Block::Table { header, rows },
            Block::Paragraph(overall),
        ],
    );

    let curves: Vec<Block> =
        grid::curves(set, grid).iter().map(|c| r.line_chart(&format!("sweep-{}", c.x_label), c)).collect();
    r.section("Sweep curves (error bars: one standard deviation)", curves);
    let chart = metric_chart(
        &format!("{} vs threads", m.name),
        &cmp,
        &set.kernels,
        &format!("{} ({})", m.name, m.unit),
    );
    let plot = r.line_chart("metric", &chart);
    r.section("Metric vs threads (error bars: one standard deviation)", vec![plot]);
    stats_attribution_counters(&mut r, set, &cmp, "combination");
    r
}

/// The sections every single-set page ends with: the mmtests statistics against the first
/// column (a `column` word names what the columns are), time attribution, events per op.
fn stats_attribution_counters(r: &mut Report, set: &ResultSet, cmp: &Comparison, column: &str) {
    r.section(
        "Statistics (mmtests compare-kernels style)",
        vec![
            Block::Paragraph(format!(
                "Percentages against the first {column}, positive = better. {}",
                cmp.mode.describe()
            )),
            Block::Pre(cmp.render()),
        ],
    );
    let cols: Vec<(String, &ResultSet, &str)> =
        set.kernels.iter().map(|k| (k.clone(), set, k.as_str())).collect();
    let blocks = attribution_side_by_side(r, &cols);
    r.section("Time attribution", blocks);
    r.section("Events per operation", counters_blocks(cmp));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::set;

    #[test]
    fn experiment_page_has_tables_plots_and_attribution() {
        let s = set("e", &[("a", &[(1, &[10.0, 11.0]), (2, &[20.0, 19.0])]), ("b+", &[(1, &[12.0, 12.5])])]);
        let r = experiment(&s, "title", "the seed table", &[]);
        let html = r.page.render();
        assert!(html.contains("the seed table") && html.contains("Hmean     1"));
        // One metric plot and ONE attribution plot, its bars thread count by thread count.
        assert_eq!(r.plots.len(), 2);
        assert_eq!(r.page.plots(), 2);
        let svg = &r.plots.iter().find(|(s, _)| s == "attribution").unwrap().1;
        let labels: Vec<usize> =
            ["1 A", "1 B", "2 A"].iter().map(|l| svg.find(&format!(">{l}<")).unwrap()).collect();
        assert!(labels.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
        assert!(html.contains("A = a, B = b+"), "{html}");
        for (stem, _) in &r.plots {
            assert!(html.contains(&format!("plots/{stem}.svg")), "{stem}");
        }
        let files = r.files().unwrap();
        assert_eq!(files.len(), 1 + 2 * 2);
        assert!(files.iter().any(|(p, b)| p.ends_with(".png") && &b[1..4] == b"PNG"));
    }

    #[test]
    fn experiment_page_shows_the_seed_beside_the_model() {
        let s = set("e", &[("a", &[(1, &[10.0, 11.0]), (2, &[20.0, 19.0])]), ("b+", &[(1, &[12.0, 12.5])])]);
        let reference = crate::seed_table::Reference {
            source: "seed table 1".into(),
            values: [("a", 1, 8.0), ("a", 2, 16.0), ("b+", 1, 10.0)].iter().fold(
                BTreeMap::new(),
                |mut m, &(k, t, v)| {
                    m.entry(k.to_string()).or_insert_with(BTreeMap::new).insert(t.to_string(), v);
                    m
                },
            ),
        };
        let pts = reference.points(&s.summary());
        let r = experiment(&s, "title", "the seed table", &pts);
        let html = r.page.render();
        // a at 1 thread: model mean of 10 and 11 against the seed's 8: +31.2%; b+ gains +25.0% in
        // the seed (10 over 8) and +16.7% in the model (12.25 over 10.5).
        assert!(html.contains("<h2>Model beside the seed</h2>"), "{html}");
        assert!(
            html.contains(
                "<td>a</td><td>1</td><td>8.00</td><td>10.50</td><td>+31.2%</td><td>-</td><td>-</td>"
            ),
            "{html}"
        );
        assert!(html.contains("<td>+25.0%</td><td>+16.7%</td>"), "{html}");
        let svg = &r.plots.iter().find(|(s, _)| s == "metric").unwrap().1;
        assert_eq!(svg.matches("<circle class=\"reference\"").count(), 3);
        assert!(svg.contains(">seed: a<") && svg.contains(">seed: b+<"));
        // Without a reference the page has neither.
        let plain = experiment(&s, "title", "the seed table", &[]);
        assert!(!plain.page.render().contains("Model beside the seed"));
        assert!(!plain.plots[0].1.contains("class=\"reference\""));
    }

    #[test]
    fn comparison_page_names_columns_by_set() {
        let a = set("x", &[("k", &[(1, &[10.0, 11.0])])]);
        let b = set("y", &[("k", &[(1, &[12.0, 13.0])])]);
        let r = comparison(&[("A".into(), &a), ("B".into(), &b)], crate::compare::Mode::Mmtests, false);
        let svg = &r.plots.iter().find(|(s, _)| s == "metric").unwrap().1;
        assert!(svg.contains(">A/k<") && svg.contains(">B/k<"));
        assert!(r.page.render().contains("<th>B/k</th>"));
    }

    #[test]
    fn comparison_page_has_one_attribution_chart_and_deltas_with_intervals() {
        let a = set("x", &[("k", &[(1, &[10.0, 11.0, 10.5]), (4, &[30.0, 31.0])])]);
        let b = set("y", &[("k", &[(4, &[36.0, 37.0]), (1, &[12.0, 13.0, 12.5])])]);
        let r = comparison(&[("A".into(), &a), ("B".into(), &b)], crate::compare::Mode::Mmtests, false);
        // The metric and ONE attribution chart, its bars thread count by thread count.
        assert_eq!(r.plots.len(), 2);
        let svg = &r.plots.iter().find(|(s, _)| s == "attribution").unwrap().1;
        let labels: Vec<usize> =
            ["1 A", "1 B", "4 A", "4 B"].iter().map(|l| svg.find(&format!(">{l}<")).unwrap()).collect();
        assert!(labels.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
        // Each bucket its own colour on every bar: user and ipi_wait differ.
        assert!(svg.contains(&format!("fill=\"{}\"><title>user", crate::plot::PALETTE[0])));
        let wait = Bucket::ALL.iter().position(|b| b.name() == "ipi_wait").unwrap();
        assert!(svg.contains(&format!("fill=\"{}\"><title>ipi_wait", crate::plot::PALETTE[wait])));
        let html = r.page.render();
        assert!(html.contains("<h2>Difference from the first column</h2>"), "{html}");
        // B at 1 thread: Hmean 12.49 over 10.49, +19.1%, with an interval around it.
        let row = html.split("<tr>").find(|r| r.contains("<td>1</td><td>B/k</td>")).unwrap();
        assert!(row.contains("<td>+19.") && row.contains("[+"), "{row}");
        assert!(html.contains("A = A/k, B = B/k"), "{html}");
    }

    #[test]
    fn sweep_page_has_the_table_best_values_curves_and_attribution() {
        let g = Grid::new(vec![grid::Axis::parse("ceiling=0,33").unwrap()]).unwrap();
        let s = set(
            "sweep",
            &[
                ("ceiling=0", &[(1, &[10.0, 11.0]), (2, &[20.0, 19.0])]),
                ("ceiling=33", &[(1, &[12.0, 12.5]), (2, &[15.0, 16.0])]),
            ],
        );
        let r = sweep(&s, &g, "sweep title", "the terminal table");
        let html = r.page.render();
        assert!(html.contains("<pre>the terminal table</pre>") && html.contains("<th>best ceiling</th>"));
        // 1 thread: 33 (12.25); 2 threads: 0 (19.5); overall 0: sqrt(10.5/12.25) = 0.926 beats
        // 33: sqrt(15.5/19.5) = 0.892.
        // At 1 thread 0's interval (10.5 ± 1.39) overlaps 33's (12.25 ± 0.69): tied.
        assert!(html.contains("<tr><td>1</td><td>33</td><td>12.25</td><td>0</td></tr>"), "{html}");
        assert!(html.contains("<tr><td>2</td><td>0</td><td>19.50</td><td></td></tr>"));
        assert!(html.contains("Best ceiling overall: 0, at 92.6%"));
        // One sweep curve, one metric chart, one attribution chart for every value.
        let stems: Vec<&str> = r.plots.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(stems, ["sweep-ceiling", "metric", "attribution"]);
        assert!(r.plots[0].1.contains(">1 thr<") && r.plots[0].1.contains(">ceiling<"));
        assert!(html.contains("A = ceiling=0, B = ceiling=33"), "{html}");
        assert_eq!(r.page.plots(), 3);
    }

    #[test]
    fn plot_stems_are_unique() {
        let mut r = Report::new("t");
        r.plot("a b", String::new(), "x");
        r.plot("a b", String::new(), "y");
        assert_ne!(r.plots[0].0, r.plots[1].0);
    }
}
