//! Plots as SVG text (and PNG through resvg): a line chart of any x/y series with error bars,
//! and stacked bars. Everything is laid out here, with fixed number formatting, so the same data
//! gives the same bytes.

use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 420.0;
/// Plot area margins: left (y tick labels), right (legend), top (title), bottom (x labels).
const ML: f64 = 78.0;
const MR: f64 = 170.0;
const MT: f64 = 40.0;
const MB: f64 = 56.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";

/// Colour-blind-safe palette: Okabe–Ito's eight, then Paul Tol's "muted" colours that stand
/// apart from them (indigo, olive, rose, wine, sand, grey), then the rest of Tol's muted set.
/// The first 14 are distinct (one per attribution bucket; a test checks), so no two buckets
/// of a chart share a colour.
pub const PALETTE: [&str; 18] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#332288",
    "#999933", "#CC6677", "#882255", "#DDCC77", "#BBBBBB", "#88CCEE", "#44AA99", "#117733", "#AA4499",
];

/// The canvas width that fits the legend's longest label right of the plot area ending at
/// `right` (about 7 px a character at 12 px), never narrower than the usual right margin:
/// legends are never cut off.
fn canvas_width<'a>(right: f64, labels: impl IntoIterator<Item = &'a str>) -> f64 {
    let longest = labels.into_iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    (right + 36.0 + 7.0 * longest + 8.0).ceil().max(right + MR)
}

/// The narrowest a stacked bar's slot may get before its label needs more room: more bars
/// widen the chart instead.
const MIN_SLOT: f64 = 30.0;

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// Half-height of the error bar (e.g. one standard deviation); 0 for none.
    pub err: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// y against x for several series, with error bars. `x_ticks` replaces the numeric x axis with
/// labelled positions (for categorical sweeps: put the points at 0, 1, 2... and name them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Start the y axis at zero (throughputs read better that way).
    pub y_from_zero: bool,
    /// Published figures to read the series against: (index of the series they belong to,
    /// points), drawn in that series' colour with a dashed line and hollow markers, and named
    /// in the legend after the series.
    pub references: Vec<(usize, Series)>,
}

/// One bar per category, each split into stacked segments; with `percent`, every bar is scaled
/// to 100%.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StackedBars {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (segment name, value per category).
    pub segments: Vec<(String, Vec<f64>)>,
    pub percent: bool,
    /// Per segment, its colour (a segment keeps its colour across charts); the palette in
    /// order where empty or short.
    pub colours: Vec<String>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Round "nice" tick positions (1, 2, 5 × 10^k) covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 1.0, lo + 1.0) };
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Tick label: short, fixed format (k/M/G suffixes for large values).
pub fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x == x.round() { format!("{x:.0}") } else { format!("{x:.2}") };
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s}{suffix}")
}

fn header(out: &mut String, title: &str, width: f64, right: f64) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" viewBox="0 0 {width} {H}" font-family="{FONT}" font-size="12">
<rect x="0" y="0" width="{width}" height="{H}" fill="#ffffff"/>
<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>
"##,
        (ML + right) / 2.0,
        esc(title)
    );
}

/// Axis frame, grid, ticks and labels; returns the y mapping's (lo, hi).
fn y_axis(out: &mut String, ticks: &[f64], y_label: &str, x_label: &str, right: f64) -> (f64, f64) {
    let (lo, hi) = (ticks[0], *ticks.last().unwrap());
    for &t in ticks {
        let y = map(t, lo, hi, H - MB, MT);
        let _ = writeln!(
            out,
            r##"<line x1="{ML}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            right,
            ML - 6.0,
            y + 4.0,
            fmt_tick(t)
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{ML}" y="{MT}" width="{:.1}" height="{:.1}" fill="none" stroke="#333333"/>
<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>
<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
        right - ML,
        H - MB - MT,
        (MT + H - MB) / 2.0,
        (MT + H - MB) / 2.0,
        esc(y_label),
        (ML + right) / 2.0,
        H - 14.0,
        esc(x_label)
    );
    (lo, hi)
}

fn legend(out: &mut String, names: &[&str], colours: &[String], filled: bool, right: f64) {
    for (i, name) in names.iter().enumerate() {
        let y = MT + 8.0 + i as f64 * 20.0;
        let c = colours.get(i).map_or(PALETTE[i % PALETTE.len()], String::as_str);
        let x = right + 14.0;
        if filled {
            let _ = writeln!(out, r#"<rect x="{x}" y="{:.1}" width="14" height="12" fill="{c}"/>"#, y - 6.0);
        } else {
            let _ = writeln!(
                out,
                r#"<line x1="{x}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2.5"/>"#,
                x + 16.0
            );
        }
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x + 22.0, y + 4.0, esc(name));
    }
}

fn map(v: f64, lo: f64, hi: f64, a: f64, b: f64) -> f64 {
    if hi == lo {
        (a + b) / 2.0
    } else {
        a + (v - lo) / (hi - lo) * (b - a)
    }
}

impl LineChart {
    pub fn to_svg(&self) -> String {
        let mut out = String::new();
        let labels =
            self.series.iter().chain(self.references.iter().map(|(_, s)| s)).map(|s| s.name.as_str());
        header(&mut out, &self.title, canvas_width(W - MR, labels), W - MR);
        let pts: Vec<&Point> = self
            .series
            .iter()
            .chain(self.references.iter().map(|(_, s)| s))
            .flat_map(|s| &s.points)
            .filter(|p| p.y.is_finite() && p.x.is_finite())
            .collect();
        let err = |p: &Point| if p.err.is_finite() { p.err.abs() } else { 0.0 };
        let mut ylo = pts.iter().map(|p| p.y - err(p)).fold(f64::INFINITY, f64::min);
        let yhi = pts.iter().map(|p| p.y + err(p)).fold(f64::NEG_INFINITY, f64::max);
        if self.y_from_zero && ylo > 0.0 {
            ylo = 0.0;
        }
        let yt = if pts.is_empty() { vec![0.0, 1.0] } else { nice_ticks(ylo, yhi, 6) };
        let (ylo, yhi) = y_axis(&mut out, &yt, &self.y_label, &self.x_label, W - MR);
        let xs: Vec<f64> = match &self.x_ticks {
            Some(t) => t.iter().map(|(x, _)| *x).collect(),
            None => pts.iter().map(|p| p.x).collect(),
        };
        let (mut xlo, mut xhi) = (
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        if !xlo.is_finite() {
            (xlo, xhi) = (0.0, 1.0);
        }
        let xticks: Vec<(f64, String)> = match &self.x_ticks {
            Some(t) => t.clone(),
            None => {
                let t = nice_ticks(xlo, xhi, 8);
                (xlo, xhi) = (t[0], *t.last().unwrap());
                t.into_iter().map(|v| (v, fmt_tick(v))).collect()
            }
        };
        // Categorical axes get half a slot of padding on each side.
        let pad = if self.x_ticks.is_some() { 0.5 } else { 0.0 };
        let (xlo, xhi) = (xlo - pad, xhi + pad);
        let px = |x: f64| map(x, xlo, xhi, ML, W - MR);
        let py = |y: f64| map(y, ylo, yhi, H - MB, MT);
        for (x, label) in &xticks {
            let _ = writeln!(
                out,
                r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#333333"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
                px(*x),
                H - MB,
                H - MB + 5.0,
                H - MB + 18.0,
                esc(label)
            );
        }
        for (i, s) in self.series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let p: Vec<&Point> = s.points.iter().filter(|p| p.y.is_finite() && p.x.is_finite()).collect();
            let path: Vec<String> = p.iter().map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y))).collect();
            let _ = writeln!(
                out,
                r#"<polyline class="series" fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for p in p {
                let (x, y) = (px(p.x), py(p.y));
                let e = err(p);
                if e > 0.0 {
                    let (y0, y1) = (py(p.y - e), py(p.y + e));
                    let _ = writeln!(
                        out,
                        r#"<path class="errorbar" d="M{x:.1} {y0:.1}V{y1:.1}M{:.1} {y0:.1}H{:.1}M{:.1} {y1:.1}H{:.1}" stroke="{c}" stroke-width="1.2"/>"#,
                        x - 4.0,
                        x + 4.0,
                        x - 4.0,
                        x + 4.0
                    );
                }
                let _ = writeln!(out, r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{c}"/>"#);
            }
        }
        for (i, s) in &self.references {
            let c = PALETTE[i % PALETTE.len()];
            let p: Vec<&Point> = s.points.iter().filter(|p| p.y.is_finite() && p.x.is_finite()).collect();
            // A dashed line only through three points or more: two published figures far apart
            // (seed 002's 1 and 55 tasks) say nothing about the curve between them.
            if p.len() >= 3 {
                let path: Vec<String> = p.iter().map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y))).collect();
                let _ = writeln!(
                    out,
                    r#"<polyline class="reference" fill="none" stroke="{c}" stroke-width="1.5" stroke-dasharray="6 4" points="{}"/>"#,
                    path.join(" ")
                );
            }
            for p in p {
                let _ = writeln!(
                    out,
                    r##"<circle class="reference" cx="{:.1}" cy="{:.1}" r="4" fill="#ffffff" stroke="{c}" stroke-width="1.5"/>"##,
                    px(p.x),
                    py(p.y)
                );
            }
        }
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        legend(&mut out, &names, &[], false, W - MR);
        reference_legend(&mut out, names.len(), &self.references);
        out.push_str("</svg>\n");
        out
    }
}

/// The legend's entries for reference series, below the series' own: a dashed line and a
/// hollow marker in the series' colour.
fn reference_legend(out: &mut String, below: usize, refs: &[(usize, Series)]) {
    for (j, (i, s)) in refs.iter().enumerate() {
        let y = MT + 8.0 + (below + j) as f64 * 20.0;
        let c = PALETTE[i % PALETTE.len()];
        let x = W - MR + 14.0;
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="6 4"/><circle cx="{:.1}" cy="{y:.1}" r="4" fill="#ffffff" stroke="{c}" stroke-width="1.5"/>"##,
            x + 16.0,
            x + 8.0
        );
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x + 22.0, y + 4.0, esc(&s.name));
    }
}

impl StackedBars {
    pub fn to_svg(&self) -> String {
        let mut out = String::new();
        let n = self.categories.len();
        let right = (ML + MIN_SLOT * n as f64).max(W - MR);
        let width = canvas_width(right, self.segments.iter().map(|(s, _)| s.as_str()));
        header(&mut out, &self.title, width, right);
        let totals: Vec<f64> = (0..n)
            .map(|c| self.segments.iter().map(|(_, v)| v.get(c).copied().unwrap_or(0.0).max(0.0)).sum())
            .collect();
        let scale = |c: usize| if self.percent && totals[c] > 0.0 { 100.0 / totals[c] } else { 1.0 };
        let top = if self.percent { 100.0 } else { totals.iter().copied().fold(0.0, f64::max) };
        let yt = nice_ticks(0.0, if top > 0.0 { top } else { 1.0 }, 5);
        let (ylo, yhi) = y_axis(&mut out, &yt, &self.y_label, "", right);
        let slot = (right - ML) / n.max(1) as f64;
        let bw = (slot * 0.7).min(60.0);
        let py = |y: f64| map(y, ylo, yhi, H - MB, MT);
        for c in 0..n {
            let x = ML + slot * (c as f64 + 0.5);
            let mut acc = 0.0;
            for (i, (name, v)) in self.segments.iter().enumerate() {
                let h = v.get(c).copied().unwrap_or(0.0).max(0.0) * scale(c);
                if h <= 0.0 {
                    continue;
                }
                let (y0, y1) = (py(acc), py(acc + h));
                let _ = writeln!(
                    out,
                    r#"<rect class="bar" x="{:.1}" y="{y1:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{}: {:.1}{}</title></rect>"#,
                    x - bw / 2.0,
                    y0 - y1,
                    self.colours.get(i).map_or(PALETTE[i % PALETTE.len()], String::as_str),
                    esc(name),
                    h,
                    if self.percent { "%" } else { "" }
                );
                acc += h;
            }
            let _ = writeln!(
                out,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                H - MB + 18.0,
                esc(&self.categories[c])
            );
        }
        legend(
            &mut out,
            &self.segments.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
            &self.colours,
            true,
            right,
        );
        out.push_str("</svg>\n");
        out
    }
}

/// Renders SVG text to PNG bytes (resvg), with the system's fonts for text (Debian:
/// fonts-dejavu-core). Without any font the text is left out, the shapes still drawn.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    use std::sync::{Arc, OnceLock};
    // Scanning the font directories takes a while; do it once per process.
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    });
    let opt = usvg::Options {
        fontdb: fonts.clone(),
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("invalid SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("cannot allocate a {}x{} image", size.width(), size.height()))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("PNG encoding: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> LineChart {
        LineChart {
            title: "ops vs threads <a&b>".into(),
            x_label: "threads".into(),
            y_label: "ops/s".into(),
            series: vec![
                Series {
                    name: "5.18.1".into(),
                    points: vec![
                        Point { x: 1.0, y: 100.0, err: 5.0 },
                        Point { x: 4.0, y: 300.0, err: 0.0 },
                        Point { x: 8.0, y: 250.0, err: 20.0 },
                    ],
                },
                Series { name: "+patch".into(), points: vec![Point { x: 1.0, y: 120.0, err: 1.0 }] },
            ],
            x_ticks: None,
            y_from_zero: true,
            references: Vec::new(),
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 95.0, 5), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_ticks(1.0, 45.0, 8), vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(nice_ticks(0.2, 0.9, 4), vec![0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        // A single value gets an axis around it.
        let t = nice_ticks(3.0, 3.0, 5);
        assert!(t[0] < 3.0 && *t.last().unwrap() > 3.0);
        assert_eq!(
            (fmt_tick(2_500_000.0), fmt_tick(20_000.0), fmt_tick(0.25)),
            ("2.5M".into(), "20k".into(), "0.25".into())
        );
    }

    #[test]
    fn line_chart_draws_every_series_point_and_error_bar() {
        let svg = chart().to_svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4);
        // Error bars only where err > 0.
        assert_eq!(svg.matches("class=\"errorbar\"").count(), 3);
        assert!(svg.contains("ops vs threads &lt;a&amp;b&gt;") && svg.contains(">+patch<"));
        // Same data, same bytes.
        assert_eq!(svg, chart().to_svg());
    }

    #[test]
    fn reference_points_take_their_series_colour_dashed_and_widen_the_axis() {
        let mut c = chart();
        let pt = |x: f64, y: f64| Point { x, y, err: 0.0 };
        let seed = Series { name: "seed: +patch".into(), points: vec![pt(1.0, 900.0)] };
        let curve = Series {
            name: "seed: 5.18.1".into(),
            points: vec![pt(1.0, 90.0), pt(4.0, 280.0), pt(8.0, 260.0)],
        };
        c.references = vec![(1, seed), (0, curve)];
        let svg = c.to_svg();
        // Hollow markers in +patch's colour (the second) and 5.18.1's, a dashed line only through
        // the three-point curve, and legend entries after the two series'.
        assert_eq!(svg.matches("<polyline class=\"reference\"").count(), 1);
        assert_eq!(svg.matches("<circle class=\"reference\"").count(), 4);
        assert!(svg.contains(">seed: 5.18.1<"));
        assert!(svg.contains(&format!("stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray", PALETTE[1])));
        assert!(svg.contains(">seed: +patch<"));
        // The y axis reaches the seed's 900, above every model point (300 + 0).
        assert!(svg.contains(">1000<"), "{svg}");
        assert!(!chart().to_svg().contains(">1000<"));
    }

    #[test]
    fn categorical_x_axis_uses_the_given_labels() {
        let mut c = chart();
        c.x_ticks = Some(vec![(1.0, "always".into()), (4.0, "never".into()), (8.0, "when needed".into())]);
        let svg = c.to_svg();
        assert!(svg.contains(">when needed<") && !svg.contains(">6<"));
    }

    #[test]
    fn stacked_bars_scale_to_percent() {
        let b = StackedBars {
            title: "time".into(),
            y_label: "% of CPU time".into(),
            categories: vec!["1".into(), "8".into()],
            segments: vec![("user".into(), vec![3.0, 1.0]), ("ipi_wait".into(), vec![1.0, 3.0])],
            percent: true,
            colours: vec!["#112233".into()],
        };
        let svg = b.to_svg();
        assert_eq!(svg.matches("class=\"bar\"").count(), 4);
        assert!(svg.contains("<title>user: 75.0%</title>") && svg.contains("<title>ipi_wait: 75.0%</title>"));
        // The given colour for the first segment, the palette's second for the other.
        assert!(svg.contains("fill=\"#112233\"") && svg.contains(&format!("fill=\"{}\"", PALETTE[1])));
    }

    #[test]
    fn palette_is_distinct_for_every_bucket_and_legends_fit() {
        let n = tlblab_model::attribution::Bucket::ALL.len();
        let mut first: Vec<&str> = PALETTE[..n].to_vec();
        first.sort_unstable();
        first.dedup();
        assert_eq!(first.len(), n);
        // A long legend label widens the canvas instead of running off its edge.
        let mut c = chart();
        c.series[0].name = "a-rather-long-result-set-name/5.18.1+patch-with-a-suffix".into();
        let svg = c.to_svg();
        let width = canvas_width(W - MR, [c.series[0].name.as_str()]);
        assert!(width > W && svg.contains(&format!("width=\"{width}\" height=\"{H}\"")), "{width}");
        assert_eq!(canvas_width(W - MR, ["short"]), W);
        // Many bars widen a stacked chart rather than squeeze their labels.
        let many = StackedBars {
            categories: (0..40).map(|i| format!("{i} A")).collect(),
            segments: vec![("user".into(), vec![1.0; 40])],
            percent: true,
            ..StackedBars::default()
        };
        let right = ML + MIN_SLOT * 40.0;
        assert!(many.to_svg().contains(&format!("width=\"{}\"", right + MR)));
    }

    #[test]
    fn png_has_the_svg_size_and_is_not_blank() {
        let png = svg_to_png(&chart().to_svg()).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        // IHDR: width and height, big-endian, at bytes 16..24.
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((w, h), (W as u32, H as u32));
        // A blank white 720x420 image compresses to a few hundred bytes; lines and text do not.
        assert!(png.len() > 3000, "{} bytes", png.len());
        assert!(svg_to_png("<svg").is_err());
    }
}
