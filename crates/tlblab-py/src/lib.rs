//! `tlblab._tlblab`: the native half of the Python package `tlblab` (python/tlblab/). Each
//! function takes plain Python values, releases the GIL while it simulates (`Python::detach`),
//! and returns JSON text that the Python half turns into dicts and pandas DataFrames. It calls
//! the same library functions as the `tlblab` command, so results and error messages are the
//! CLI's; every error is raised as `ValueError` with the CLI's one-line message.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

use tlblab::cmd::sweep::SweepArgs;
use tlblab::export::tidy;
use tlblab::results::{Finished, RunOptions, Shard};
use tlblab::spec::{self, parse_duration, Spec};
use tlblab::{cmd, experiment, machines, results};

/// An error as the CLI prints it, raised as ValueError.
fn err(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(format!("{e:#}"))
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| err(e.into()))
}

/// The request, from `Spec::new`'s defaults and what the caller gave.
#[allow(clippy::too_many_arguments)]
fn spec(
    machine: String,
    workload: String,
    kernel: Option<String>,
    set: Vec<String>,
    param: Vec<String>,
    duration: Option<String>,
    warmup: Option<String>,
) -> PyResult<Spec> {
    let dur =
        |flag: &str, s: &str| parse_duration(s).map_err(|m| PyValueError::new_err(format!("{flag} {m}")));
    let mut s = Spec::new(&machine, &workload);
    s.params = param;
    s.set = set;
    if let Some(k) = kernel {
        s.kernel = k;
    }
    s.duration = duration.as_deref().map(|d| dur("duration:", d)).transpose()?;
    if let Some(w) = warmup {
        s.warmup = dur("warmup:", &w)?;
    }
    Ok(s)
}

fn tidy_json(set: &tlblab_report::summary::ResultSet) -> PyResult<String> {
    let t = tidy::table(set);
    json(&serde_json::json!({ "columns": t.columns, "rows": t.rows }))
}

/// One simulated run; the RunResult as `tlblab run --json` prints it.
#[pyfunction]
#[pyo3(signature = (machine, workload, threads=None, kernel=None, set=vec![], param=vec![], duration=None, warmup=None, seed=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    machine: String,
    workload: String,
    threads: Option<u32>,
    kernel: Option<String>,
    set: Vec<String>,
    param: Vec<String>,
    duration: Option<String>,
    warmup: Option<String>,
    seed: Option<u64>,
) -> PyResult<String> {
    let s = spec(machine, workload, kernel, set, param, duration, warmup)?;
    let r = py.detach(|| s.simulate(threads, seed.unwrap_or(spec::DEFAULT_SEED))).map_err(err)?;
    serde_json::to_string_pretty(&r).map_err(|e| err(e.into()))
}

/// A sweep as `tlblab sweep` runs it; returns the tidy table `{"columns", "rows"}` (one row per
/// run), or for a shard `{"ran", "reused", "skipped"}`. With `out`, cells go to the store there;
/// with `report` also summary.json, sweep.json and the HTML report. `progress(n, total)` is
/// called (with the GIL) as runs finish.
#[pyfunction]
#[pyo3(signature = (machine, workload, threads, vary, kernel=None, set=vec![], param=vec![], duration=None, warmup=None, iterations=1, jobs=None, out=None, report=true, shard=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    machine: String,
    workload: String,
    threads: Vec<u32>,
    vary: Vec<String>,
    kernel: Option<String>,
    set: Vec<String>,
    param: Vec<String>,
    duration: Option<String>,
    warmup: Option<String>,
    iterations: u32,
    jobs: Option<usize>,
    out: Option<PathBuf>,
    report: bool,
    shard: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    // Called from the worker threads: each call takes the GIL for the callback only (the
    // simulation runs detached); an exception in it is dropped, a display must not stop a sweep.
    let progress = progress.map(|cb| {
        results::Progress(std::sync::Arc::new(move |n: u64, total: u64| {
            Python::attach(|py| {
                let _ = cb.call1(py, (n, total));
            });
        }))
    });
    let shard = shard.as_deref().map(Shard::parse).transpose().map_err(PyValueError::new_err)?;
    check_out(out.as_ref(), shard.is_some().then_some("shard"))?;
    let a = SweepArgs {
        sim: spec(machine, workload, kernel, set, param, duration, warmup)?,
        threads,
        vary,
        iterations,
        jobs,
        json: false,
        out,
        shard,
        progress,
    };
    let done = py.detach(|| -> anyhow::Result<_> {
        let done = cmd::sweep::sweep(&a, a.out.as_deref())?;
        if let (Finished::All(sw), Some(dir), true) = (&done, &a.out, report) {
            cmd::sweep::save(&a, sw, dir)?;
        }
        Ok(done)
    });
    match done.map_err(err)? {
        Finished::All(sw) => tidy_json(&sw.set),
        Finished::Shard(r) => {
            json(&serde_json::json!({ "ran": r.ran, "reused": r.reused, "skipped": r.skipped }))
        }
    }
}

/// `out` must be a directory (or not exist yet); `needed_by` names the argument that cannot work
/// without one.
fn check_out(out: Option<&PathBuf>, needed_by: Option<&str>) -> PyResult<()> {
    if let (Some(what), None) = (needed_by, out) {
        return Err(PyValueError::new_err(format!("{what}: needs out, the shared results directory")));
    }
    match out.filter(|d| d.exists() && !d.is_dir()) {
        Some(d) => Err(PyValueError::new_err(format!("out {}: is a file; give a directory", d.display()))),
        None => Ok(()),
    }
}

/// `tlblab advise --json`. `prefill(vary, threads, dir)`, when given (with `out`), is called with
/// the GIL before each sweep with the sweep's `--vary` values, thread counts and store directory;
/// what it stores there the sweep reuses. An exception it raises stops advise and is raised
/// unchanged.
#[pyfunction]
#[pyo3(signature = (machine, workload, threads=None, kernel=None, set=vec![], param=vec![], duration=None, warmup=None, iterations=3, jobs=None, out=None, prefill=None))]
#[allow(clippy::too_many_arguments)]
fn advise(
    py: Python<'_>,
    machine: String,
    workload: String,
    threads: Option<Vec<u32>>,
    kernel: Option<String>,
    set: Vec<String>,
    param: Vec<String>,
    duration: Option<String>,
    warmup: Option<String>,
    iterations: u32,
    jobs: Option<usize>,
    out: Option<PathBuf>,
    prefill: Option<Py<PyAny>>,
) -> PyResult<String> {
    check_out(out.as_ref(), prefill.is_some().then_some("prefill"))?;
    if !(2..=results::MAX_ITERATIONS).contains(&(iterations as u64)) {
        return Err(PyValueError::new_err(format!(
            "iterations {iterations}: allowed 2 ..= {} (the significance test needs a spread)",
            results::MAX_ITERATIONS
        )));
    }
    let a = cmd::advise::AdviseArgs {
        sim: spec(machine, workload, kernel, set, param, duration, warmup)?,
        threads: threads.unwrap_or_default(),
        iterations,
        jobs,
        json: true,
        out,
    };
    // The callback's own exception, kept to raise as it was.
    let raised: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let fill = |s: &SweepArgs, dir: &std::path::Path| -> anyhow::Result<()> {
        let Some(cb) = &prefill else { return Ok(()) };
        Python::attach(|py| {
            cb.call1(py, (s.vary.clone(), s.threads.clone(), dir.to_string_lossy().into_owned())).map(drop)
        })
        .map_err(|e| {
            *raised.lock().expect("not poisoned") = Some(e);
            anyhow::anyhow!("prefill raised")
        })
    };
    let done = py.detach(|| cmd::advise::advise_with(a, &fill));
    if let Some(e) = raised.lock().expect("not poisoned").take() {
        return Err(e);
    }
    json(&done.map_err(err)?)
}

/// A saved result set (`reproduce --out` experiment directory or `sweep --out` directory) as the
/// tidy table.
#[pyfunction]
fn load(py: Python<'_>, dir: PathBuf) -> PyResult<String> {
    let (_, set) = py.detach(|| results::load_set(&dir)).map_err(err)?;
    tidy_json(&set)
}

/// Seed reproductions (one by name or prefix, or all): per experiment its name, its table in
/// the seed's layout and the tidy table; with `out`, saved as `tlblab reproduce --out` does.
#[pyfunction]
#[pyo3(signature = (name=None, out=None, quick=false, jobs=None))]
fn reproduce(
    py: Python<'_>,
    name: Option<String>,
    out: Option<PathBuf>,
    quick: bool,
    jobs: Option<usize>,
) -> PyResult<String> {
    let sets = py
        .detach(|| -> anyhow::Result<Vec<serde_json::Value>> {
            let experiments = match &name {
                Some(n) => experiment::load(n)?,
                None => {
                    let mut all = Vec::new();
                    for n in experiment::builtin_names() {
                        all.extend(experiment::load(n)?);
                    }
                    all
                }
            };
            if let Some(o) = &out {
                tlblab::store::check_out_dir(o, "out")?;
            }
            let mut done = Vec::new();
            for e in &experiments {
                let dir = out.as_ref().map(|o| tlblab::store::child(o, &e.name)).transpose()?;
                let opts = RunOptions {
                    jobs,
                    store: dir.clone(),
                    progress_label: e.name.clone(),
                    ..Default::default()
                };
                let Finished::All(set) = experiment::run(e, quick, &opts)? else {
                    unreachable!("no shard given")
                };
                if let Some(dir) = &dir {
                    cmd::reproduce::save(e, &set, dir)?;
                }
                let t = tidy::table(&set);
                done.push(serde_json::json!({
                    "name": e.name,
                    "table": experiment::render(e, &set.summary(), experiment::quick_note(e, &set).is_some()),
                    "columns": t.columns,
                    "rows": t.rows,
                }));
            }
            Ok(done)
        })
        .map_err(err)?;
    json(&sets)
}

/// What this build knows: machines, workloads, kernel presets and knobs, ebizzy parameters,
/// experiments (as `tlblab list` prints them).
#[pyfunction]
fn list() -> PyResult<String> {
    let mut ms = Vec::new();
    for name in machines::builtin_names() {
        let p = machines::load(name).map_err(err)?;
        ms.push(serde_json::json!({
            "name": p.name,
            "cpu": p.cpu.model_name,
            "cpus": p.topology.cpus(),
            "mhz": p.clock_mhz(),
        }));
    }
    let pairs = |v: &[(&str, &str)]| -> serde_json::Value {
        v.iter()
            .map(|(n, d)| (n.to_string(), serde_json::Value::from(*d)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    json(&serde_json::json!({
        "machines": ms,
        "workloads": tlblab_model::run::Workload::names(),
        "kernel_presets": tlblab_model::linux::preset::presets()
            .map(|(n, d)| (n.to_string(), serde_json::Value::from(d)))
            .collect::<serde_json::Map<_, _>>(),
        "knobs": tlblab_model::linux::config::knobs()
            .map(|k| (k.name.to_string(), serde_json::Value::from(k.allowed)))
            .collect::<serde_json::Map<_, _>>(),
        "ebizzy_params": pairs(tlblab_model::workload::ebizzy::PARAMS),
        "experiments": experiment::builtin_names(),
    }))
}

#[pymodule]
fn _tlblab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(advise, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(list, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The defaults of `tlblab::spec`, so the Python signatures show the CLI's without a copy.
    let defaults = pyo3::types::PyDict::new(m.py());
    defaults.set_item("kernel", spec::DEFAULT_KERNEL)?;
    defaults.set_item("warmup", spec::DEFAULT_WARMUP)?;
    defaults.set_item("seed", spec::DEFAULT_SEED)?;
    m.add("DEFAULTS", defaults)?;
    Ok(())
}
