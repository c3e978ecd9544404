//! A sweep's grid and what it finds: the varied knobs (axes) and their cross product, the best
//! combination per thread count and overall, and the sweep curves (metric against one varied
//! value, one line per thread count).
//!
//! A sweep is stored as a [`ResultSet`] whose columns ("kernels") are the combinations'
//! labels, `ceiling=33` or `ceiling=33,alloc=mmap`, so `summary.json`, `compare` and the
//! experiment report pieces read it like any other set.

use crate::plot::{LineChart, Point, Series};
use crate::stats;
use crate::summary::ResultSet;

/// One varied knob and its values, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

impl Axis {
    /// `KNOB=V1,V2,...` (as `--vary` takes it). Values must be distinct: each names a file.
    pub fn parse(s: &str) -> Result<Axis, String> {
        let (k, v) = s.split_once('=').ok_or_else(|| format!("--vary `{s}`: expected KNOB=V1,V2,..."))?;
        let key = k.trim().to_string();
        if key.is_empty() {
            return Err(format!("--vary `{s}`: the knob name is empty; expected KNOB=V1,V2,..."));
        }
        let values: Vec<String> =
            v.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
        if values.is_empty() {
            return Err(format!("--vary `{s}`: give at least one value"));
        }
        for (i, x) in values.iter().enumerate() {
            if values[..i].contains(x) {
                return Err(format!("--vary `{s}`: value `{x}` is listed twice"));
            }
        }
        Ok(Axis { key, values })
    }

    /// Whether the values are numbers to place on a numeric x axis. Kernel presets never are
    /// ("3.4" comes before "3.13").
    pub fn numeric(&self) -> bool {
        self.key != "kernel" && self.values.iter().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
    }
}

/// The axes and their cross product, first axis slowest.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub axes: Vec<Axis>,
    /// Per combination, the value of each axis.
    pub combos: Vec<Vec<String>>,
}

impl Grid {
    pub fn new(axes: Vec<Axis>) -> Result<Grid, String> {
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].iter().any(|o| o.key == a.key) {
                return Err(format!("--vary {}: given twice; list every value in one --vary", a.key));
            }
        }
        let mut combos: Vec<Vec<String>> = vec![vec![]];
        for ax in &axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    ax.values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push(v.clone());
                        c
                    })
                })
                .collect();
        }
        Ok(Grid { axes, combos })
    }

    /// The column label of combination `i`: `ceiling=33,alloc=mmap`.
    pub fn label(&self, i: usize) -> String {
        self.axes
            .iter()
            .zip(&self.combos[i])
            .map(|(a, v)| format!("{}={v}", a.key))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn labels(&self) -> Vec<String> {
        (0..self.combos.len()).map(|i| self.label(i)).collect()
    }

    /// The varied knobs' names joined: `ceiling`, or `kernel,alloc`.
    pub fn key(&self) -> String {
        self.axes.iter().map(|a| a.key.as_str()).collect::<Vec<_>>().join(",")
    }

    /// Combination `i`'s values joined: `33`, or `3.13,mmap`.
    pub fn value(&self, i: usize) -> String {
        self.combos[i].join(",")
    }
}

/// The best combination(s) at one thread count.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    pub threads: u32,
    /// Indices into `Grid::combos`: the best and those tied with it, in the order given.
    pub tied: Vec<usize>,
    pub mean: f64,
}

/// Whether two cells' means are told apart: with two or more iterations each, when their 95%
/// confidence intervals as mmtests draws them (mean ± 1.96 × stddev; `compare::ci_apart`, the
/// `*` mark of `compare`) do not overlap; with a single iteration on either side there is no
/// interval, and only an exact tie of the means is a tie.
pub fn distinguishable(a: &[f64], b: &[f64]) -> bool {
    if a.len() < 2 || b.len() < 2 {
        return stats::mean(a) != stats::mean(b);
    }
    crate::compare::ci_apart(a, b, stats::mean, stats::stddev)
}

/// The best combination per thread count (by the mean over iterations, in the metric's
/// direction; tied with it: every combination [`distinguishable`] does not tell from it), and
/// overall: the combination with the highest geometric mean, over thread counts,
/// of its score relative to that count's best (the first given on a tie), with that mean.
/// Thread counts whose best counted nothing say nothing about the values and are left out of
/// the overall choice.
pub fn best(set: &ResultSet, grid: &Grid) -> (Vec<Best>, Option<(usize, f64)>) {
    let hib = set.metric.higher_is_better;
    let labels = grid.labels();
    let mean = |i: usize, t: u32| set.cell(&labels[i], t).map(|c| stats::mean(&c.samples()));
    let samples = |i: usize, t: u32| set.cell(&labels[i], t).map(|c| c.samples()).unwrap_or_default();
    let better = |a: f64, b: f64| if hib { a > b } else { a < b };
    let mut per_thread = Vec::new();
    for t in set.threads() {
        let means: Vec<(usize, f64)> = (0..labels.len()).filter_map(|i| Some((i, mean(i, t)?))).collect();
        let Some(&(_, first)) = means.first() else { continue };
        let top = means.iter().map(|m| m.1).fold(first, |b, m| if better(m, b) { m } else { b });
        // The best first (the first given of equal means), then the others its interval does
        // not tell apart, in the order given.
        let best_i = means.iter().find(|m| m.1 == top).map(|m| m.0).expect("a top mean");
        let top_x = samples(best_i, t);
        let mut tied = vec![best_i];
        tied.extend(
            means.iter().filter(|m| m.0 != best_i && !distinguishable(&samples(m.0, t), &top_x)).map(|m| m.0),
        );
        per_thread.push(Best { threads: t, tied, mean: top });
    }
    let mut overall: Option<(usize, f64)> = None;
    for i in 0..labels.len() {
        let logs: Vec<f64> = per_thread
            .iter()
            .filter(|b| b.mean > 0.0)
            .filter_map(|b| {
                let m = mean(i, b.threads)?;
                Some(if hib { m / b.mean } else { b.mean / m }.ln())
            })
            .collect();
        if logs.is_empty() {
            continue;
        }
        let g = stats::mean(&logs).exp();
        if overall.is_none_or(|(_, best)| g > best) {
            overall = Some((i, g));
        }
    }
    (per_thread, overall)
}

/// The sweep curves: for each axis, the metric against that axis's values with one line per
/// thread count and error bars of one standard deviation; with several axes, one chart per
/// combination of the other axes' values. Numeric values sit on a numeric x axis (in
/// increasing order), others at evenly spaced, labelled positions in the order given.
pub fn curves(set: &ResultSet, grid: &Grid) -> Vec<LineChart> {
    let labels = grid.labels();
    let y_label = format!("{} ({})", set.metric.name, set.metric.unit);
    let mut charts = Vec::new();
    for (ai, axis) in grid.axes.iter().enumerate() {
        // Groups: the other axes' values, in first-seen order.
        let others = |c: &Vec<String>| {
            c.iter().enumerate().filter(|(j, _)| *j != ai).map(|(_, v)| v.clone()).collect::<Vec<_>>()
        };
        let mut groups: Vec<Vec<String>> = Vec::new();
        for c in &grid.combos {
            if !groups.contains(&others(c)) {
                groups.push(others(c));
            }
        }
        let numeric = axis.numeric();
        for g in &groups {
            let x_of = |vi: usize| if numeric { axis.values[vi].parse::<f64>().unwrap() } else { vi as f64 };
            let series = set
                .threads()
                .into_iter()
                .map(|t| {
                    let mut points: Vec<Point> = (0..axis.values.len())
                        .filter_map(|vi| {
                            let ci = grid
                                .combos
                                .iter()
                                .position(|c| c[ai] == axis.values[vi] && &others(c) == g)?;
                            let x = set.cell(&labels[ci], t)?.samples();
                            let sd = stats::stddev(&x);
                            Some(Point {
                                x: x_of(vi),
                                y: stats::mean(&x),
                                err: if sd.is_nan() { 0.0 } else { sd },
                            })
                        })
                        .collect();
                    points.sort_by(|a, b| a.x.total_cmp(&b.x));
                    Series { name: format!("{t} thr"), points }
                })
                .collect();
            let rest: Vec<String> = grid
                .axes
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != ai)
                .zip(g)
                .map(|((_, a), v)| format!("{}={v}", a.key))
                .collect();
            charts.push(LineChart {
                title: if rest.is_empty() {
                    format!("{} vs {}", set.metric.name, axis.key)
                } else {
                    format!("{} vs {}, {}", set.metric.name, axis.key, rest.join(","))
                },
                x_label: axis.key.clone(),
                y_label: y_label.clone(),
                series,
                x_ticks: (!numeric)
                    .then(|| axis.values.iter().enumerate().map(|(i, v)| (i as f64, v.clone())).collect()),
                y_from_zero: true,
                references: Vec::new(),
            });
        }
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::set;

    fn grid(axes: &[&str]) -> Grid {
        Grid::new(axes.iter().map(|a| Axis::parse(a).unwrap()).collect()).unwrap()
    }

    #[test]
    fn axes_parse_and_the_grid_is_the_cross_product_first_axis_slowest() {
        let g = grid(&["kernel=3.4,3.13", "alloc=glibc-2.18, mmap"]);
        assert_eq!(
            g.labels(),
            [
                "kernel=3.4,alloc=glibc-2.18",
                "kernel=3.4,alloc=mmap",
                "kernel=3.13,alloc=glibc-2.18",
                "kernel=3.13,alloc=mmap"
            ]
        );
        assert_eq!((g.key(), g.value(3)), ("kernel,alloc".into(), "3.13,mmap".into()));
        assert!(!g.axes[0].numeric() && !g.axes[1].numeric());
        assert!(Axis::parse("ceiling=0,33").unwrap().numeric());
        assert!(Axis::parse("ceiling").unwrap_err().contains("KNOB=V1,V2"));
        assert!(Axis::parse("ceiling=,").unwrap_err().contains("at least one value"));
        assert!(Axis::parse("ceiling=1,2,1").unwrap_err().contains("`1` is listed twice"));
        let twice = vec![Axis::parse("ceiling=1").unwrap(), Axis::parse("ceiling=2").unwrap()];
        assert!(Grid::new(twice).unwrap_err().contains("given twice"));
    }

    #[test]
    fn best_per_thread_count_with_ties_and_overall_by_geometric_mean() {
        let g = grid(&["ceiling=0,33,64"]);
        let s = set(
            "sweep",
            &[
                ("ceiling=0", &[(1, &[100.0, 100.0]), (8, &[50.0])]),
                ("ceiling=33", &[(1, &[90.0]), (8, &[80.0])]),
                ("ceiling=64", &[(1, &[100.0]), (8, &[10.0])]),
            ],
        );
        let (per, overall) = best(&s, &g);
        assert_eq!(per[0], Best { threads: 1, tied: vec![0, 2], mean: 100.0 });
        assert_eq!(per[1], Best { threads: 8, tied: vec![1], mean: 80.0 });
        // 0: sqrt(1 * 50/80) = 0.79; 33: sqrt(0.9 * 1) = 0.949; 64: sqrt(1 * 0.125) = 0.35.
        let (i, gm) = overall.unwrap();
        assert_eq!(i, 1);
        assert!((gm - 0.9f64.sqrt()).abs() < 1e-12);
        // Lower is better: the smallest mean wins.
        let mut low = s.clone();
        low.metric.higher_is_better = false;
        let (per, overall) = best(&low, &g);
        assert_eq!((per[0].tied.clone(), per[1].tied.clone()), (vec![1], vec![2]));
        assert_eq!(overall.unwrap().0, 2);
        // A thread count whose best counted nothing is left out of the overall choice.
        let z = set("sweep", &[("ceiling=0", &[(1, &[0.0])]), ("ceiling=33", &[(1, &[0.0])])]);
        assert_eq!(best(&z, &grid(&["ceiling=0,33"])).1, None);
    }

    #[test]
    fn ties_are_overlapping_confidence_intervals_not_equal_means() {
        // A 5-thread case seen in a sweep: 350,100 ± 1,782 and 349,700 ± 2,049 (five runs each) are
        // one result; a clearly lower third is not tied.
        let around = |m: f64, sd: f64| -> Vec<f64> {
            // Five samples with mean m and sample stddev sd: deviations -a, -a/2, 0, a/2, a,
            // whose squares sum to 2.5 a², which must be (n - 1) sd² = 4 sd².
            let a = sd * (4.0f64 / 2.5).sqrt();
            [-a, -a / 2.0, 0.0, a / 2.0, a].iter().map(|d| m + d).collect()
        };
        let g = grid(&["ceiling=0,33,64"]);
        let (x0, x1, x2) =
            (around(349_700.0, 2_049.0), around(350_100.0, 1_782.0), around(300_000.0, 1_000.0));
        assert!((stats::stddev(&x1) - 1_782.0).abs() < 1e-6);
        let s = set(
            "sweep",
            &[("ceiling=0", &[(5, &x0)]), ("ceiling=33", &[(5, &x1)]), ("ceiling=64", &[(5, &x2)])],
        );
        let (per, _) = best(&s, &g);
        assert_eq!(per[0].tied, vec![1, 0]);
        assert!(distinguishable(&x1, &x2) && !distinguishable(&x0, &x1));
        // One iteration: no interval, only equal means tie.
        assert!(distinguishable(&[1.0], &[1.0001]) && !distinguishable(&[2.0], &[2.0]));
    }

    #[test]
    fn curves_put_numeric_values_in_order_and_categories_in_the_given_order() {
        let g = grid(&["ceiling=64,0"]);
        let s = set(
            "sweep",
            &[
                ("ceiling=64", &[(1, &[10.0, 14.0]), (2, &[5.0])]),
                ("ceiling=0", &[(1, &[20.0]), (2, &[7.0])]),
            ],
        );
        let c = curves(&s, &g);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].series.len(), 2);
        assert_eq!(c[0].series[0].name, "1 thr");
        let p = &c[0].series[0].points;
        assert_eq!((p[0].x, p[0].y, p[1].x, p[1].y), (0.0, 20.0, 64.0, 12.0));
        assert!((p[1].err - 8f64.sqrt()).abs() < 1e-12 && p[0].err == 0.0);
        assert!(c[0].x_ticks.is_none());
        // Two categorical axes: one chart per value of the other axis, for each axis.
        let g = grid(&["kernel=3.4,3.13", "alloc=a,b"]);
        let l = g.labels();
        let s = set(
            "sweep",
            &[
                (l[0].as_str(), &[(2, &[1.0][..])][..]),
                (l[1].as_str(), &[(2, &[2.0][..])][..]),
                (l[2].as_str(), &[(2, &[3.0][..])][..]),
                (l[3].as_str(), &[(2, &[4.0][..])][..]),
            ],
        );
        let c = curves(&s, &g);
        let titles: Vec<&str> = c.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "ops vs kernel, alloc=a",
                "ops vs kernel, alloc=b",
                "ops vs alloc, kernel=3.4",
                "ops vs alloc, kernel=3.13"
            ]
        );
        let ticks = c[0].x_ticks.clone().unwrap();
        assert_eq!(ticks, [(0.0, "3.4".to_string()), (1.0, "3.13".to_string())]);
        // alloc=b: kernel 3.4 -> 2, kernel 3.13 -> 4.
        let ys: Vec<f64> = c[1].series[0].points.iter().map(|p| p.y).collect();
        assert_eq!(ys, [2.0, 4.0]);
    }
}
