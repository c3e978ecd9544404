"""tlblab from Python: simulated runs, sweeps and seed reproductions as dicts and pandas
DataFrames.

The simulations run in Rust (the same library as the ``tlblab`` command; the GIL is released
while they run), so results are byte-for-byte the CLI's and the same for any number of threads.
Every bad argument raises ``ValueError`` naming the Python parameter and the allowed values, with
the nearest valid name when one is close (``machine: unknown machine `haswel-ep-2s`; did you
mean `haswell-ep-2s`?``); a profile, preset or result directory that does not exist raises
``FileNotFoundError``. Durations are text with a unit (``"5ms"``, ``"200us"``, ``"1s"``, ``"500ns"``),
a number of seconds (``0.005``) or a ``datetime.timedelta``.

    >>> import tlblab
    >>> r = tlblab.run("haswell-ep-2s", "tlb_flush1_threads", threads=4, kernel="5.18.1+patch")
    >>> r.to_frame()        # one tidy row; r itself is the dict ``tlblab run --json`` prints
    >>> df = tlblab.sweep("ivybridge-4c8t", "ebizzy", threads=[1, 2, 4],
    ...                   vary={"ceiling": [0, 33, 128]}, iterations=3)

A sweep's cells can run on a Dask cluster: ``tlblab.sweep(..., client=distributed.Client(...))``
gives the same DataFrame as a local run (see ``sweep``); so can ``advise``'s sweeps.
"""

from __future__ import annotations

import builtins
import datetime
import difflib
import errno
import functools
import itertools
import json
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _tlblab

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["run", "sweep", "advise", "load", "reproduce", "list", "sweep_cells", "run_cell", "map_cells",
           "RunResult"]
__version__ = _tlblab.__version__
# The CLI's defaults (kernel preset, warm-up, seed), written once in Rust (tlblab::spec).
_DEFAULTS = _tlblab.DEFAULTS

Value = Union[str, int, float]
PathLike = Union[str, "os.PathLike[str]"]
Duration = Union[str, int, float, datetime.timedelta]

# The CLI's flags in the library's messages, as this API's parameters.
_FLAGS = re.compile(r"--(machine|workload|threads|kernel|set|param|duration|warmup|seed|iterations|jobs|vary|out|shard)\b")


def _native(fn: Callable[..., str], *args: Any, **kwargs: Any) -> Any:
    """Calls a native function. Its errors are the CLI's, raised as ValueError, with each CLI
    flag they name written as the Python parameter (``--threads 99`` -> ``threads 99``); a wrong
    argument type (TypeError from the conversion) becomes ValueError too."""
    try:
        text = fn(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(_FLAGS.sub(r"\1", str(e))) from None
    return json.loads(text)


@functools.lru_cache(maxsize=None)
def _known() -> Dict[str, Any]:
    """``list()``, read once: the names the arguments are checked against."""
    return json.loads(_tlblab.list())


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, builtins.list(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _unknown(param: str, what: str, name: str, choices: Sequence[str], tail: str = "") -> ValueError:
    return ValueError(f"{param}: unknown {what} `{name}`{_did_you_mean(name, choices)}; "
                      f"allowed: {', '.join(choices)}{tail}")


def _is_path(s: str) -> bool:
    return "/" in s or os.sep in s or s.endswith(".toml")


def _name_or_path(param: str, value: Any, noun: str, file: str, names: Callable[[], List[str]]) -> str:
    """A built-in name or a path to a TOML file: machine profiles (noun "machine", file "profile")
    and kernel presets (noun and file "preset")."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise ValueError(f"{param}: expected a {noun} name or a {file} path, got {value!r}")
    if _is_path(value):
        if not os.path.exists(value):
            raise FileNotFoundError(errno.ENOENT, f"{param}: no such {param} {file}", value)
        return value
    known = names()
    if value not in known:
        what = param if noun == param else f"{param} {noun}"
        raise _unknown(param, what, value, known, f" (or a path to a .toml {file})")
    return value


def _machine(machine: Any) -> str:
    return _name_or_path("machine", machine, "machine", "profile",
                         lambda: [m["name"] for m in _known()["machines"]])


def _workload_name(workload: Any) -> str:
    """The workload's first word (``ebizzy`` of ``"ebizzy -m"``), checked against the known ones."""
    if not isinstance(workload, str) or not workload.strip():
        raise ValueError(f"workload: expected a workload such as \"tlb_flush1_threads\" or \"ebizzy -m\", got {workload!r}")
    first = workload.split()[0]
    names = builtins.list(dict.fromkeys(w.split()[0] for w in _known()["workloads"]))
    if first not in names:
        raise _unknown("workload", "workload", first, names)
    return first


def _params_of(workload: str) -> Optional[List[str]]:
    """The parameters a workload takes, where this API knows them (None: left to the library)."""
    if workload == "ebizzy":
        return builtins.list(_known()["ebizzy_params"])
    if workload.endswith(("_threads", "_processes")):
        return []  # will-it-scale's tests take none
    return None


def _kernel(kernel: Any) -> str:
    return _name_or_path("kernel", kernel, "preset", "preset", lambda: builtins.list(_known()["kernel_presets"]))


def _check_keys(param: str, keys: Any, workload: str, kernel_too: bool = False) -> None:
    """Knob (``set``), parameter (``param``) or either (``vary``) names, with the nearest valid one."""
    knobs = builtins.list(_known()["knobs"])
    params = _params_of(workload)
    for k in keys:
        if param == "set":
            if k not in knobs:
                raise _unknown("set", "knob", k, knobs)
        elif param == "param":
            if params is not None and k not in params:
                if not params:
                    raise ValueError(f"param: workload `{workload}` takes no parameters (got `{k}`)")
                raise _unknown("param", f"{workload} parameter", k, params)
        else:
            allowed = (["kernel"] if kernel_too else []) + knobs + (params or [])
            if k not in allowed and params is not None:
                raise ValueError(
                    f"vary: unknown knob `{k}`{_did_you_mean(k, allowed)}; vary takes `kernel`, a kernel knob: "
                    f"{', '.join(knobs)}, or a parameter of {workload}: {', '.join(params) or 'none'}")


def _duration(name: str, v: Any) -> Optional[str]:
    """A duration as the library reads it: text with a unit as given, a number of seconds or a
    timedelta as seconds (``0.005`` -> ``"0.005s"``)."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{float(v)!r}s"
    raise ValueError(f"{name}: expected a duration: text with a unit (\"5ms\", \"200us\"), a number of "
                     f"seconds or a datetime.timedelta, got {v!r}")


def _check(machine: Any, workload: Any, kernel: Any, set: Any, param: Any):
    """The names of a run's arguments, before anything runs (the library checks the values);
    returns machine and kernel as text (paths given as os.PathLike too)."""
    machine = _machine(machine)
    w = _workload_name(workload)
    kernel = _kernel(kernel)
    if isinstance(set, Mapping):
        _check_keys("set", set.keys(), w)
    if isinstance(param, Mapping):
        _check_keys("param", param.keys(), w)
    return machine, kernel


def _pairs(name: str, d: Optional[Mapping[str, Value]]) -> List[str]:
    if d is None:
        return []
    if not isinstance(d, Mapping):
        raise ValueError(f"{name}: expected a dict of KEY: VALUE, got {type(d).__name__}")
    return [f"{k}={_text(name, v)}" for k, v in d.items()]


def _text(name: str, v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError(f"{name}: values must be str, int or float, got {v!r}")
    return str(v)


def _int(name: str, v: Any, optional: bool = False) -> Optional[int]:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name}: expected an int, got {v!r}")
    return v


def _threads(threads: Any) -> List[int]:
    ts = [threads] if isinstance(threads, int) else threads
    if isinstance(ts, (str, bytes)) or not isinstance(ts, Sequence) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in ts
    ):
        raise ValueError(f"threads: expected an int or a list of ints, got {threads!r}")
    return builtins.list(ts)


def _vary(vary: Any, workload: Optional[str] = None) -> List[str]:
    if not isinstance(vary, Mapping) or not vary:
        raise ValueError(
            "vary: expected a dict {knob: [values]}: `kernel`, a kernel knob (tlblab.list()['knobs']) "
            "or a workload parameter"
        )
    if workload is not None:
        _check_keys("vary", vary.keys(), _workload_name(workload), kernel_too=True)
    out = []
    for k, vs in vary.items():
        vs = [vs] if isinstance(vs, (str, int, float)) else vs
        out.append(f"{k}=" + ",".join(_text(f"vary[{k!r}]", v) for v in vs))
    return out


def _frame(table: Mapping[str, Any]):
    import pandas as pd

    return _canonical(pd.DataFrame(table["rows"], columns=table["columns"]))


def _canonical(df):
    """Fixed column order (identity columns, then counters and attribution sorted) and a fresh
    index, so frames assembled from cells run anywhere compare equal."""
    head = [c for c in df.columns if not c.startswith(("counters.", "attribution_ps."))]
    tail = sorted(c for c in df.columns if c.startswith("counters.")) + sorted(
        c for c in df.columns if c.startswith("attribution_ps.")
    )
    return df[head + tail].reset_index(drop=True)


def _categorical(df):
    """``column`` and the knob columns after it as categoricals whose categories keep the order
    the values were given in (rows come in the sweep's order: the first appearance of each value
    is its place in ``vary``), so groupby, sort and plots follow that order, not the values'."""
    import pandas as pd

    cols = builtins.list(df.columns)
    if "column" in cols and "threads" in cols:
        for c in cols[cols.index("column"):cols.index("threads")]:
            df[c] = pd.Categorical(df[c], categories=pd.unique(df[c]))
    return df


def _bar(progress: bool, unit: str):
    """A tqdm bar on standard error; shown when ``progress`` and that is a terminal."""
    from tqdm import tqdm

    return tqdm(total=None, unit=unit, desc="tlblab sweep", disable=None if progress else True, leave=False)


class RunResult(dict):
    """One run: the dict ``tlblab run --json`` prints (``r["metric"]["value"]``,
    ``r["counters"]``, ``r["attribution"]`` per CPU, ...), plus ``to_frame()``."""

    def to_frame(self) -> pd.DataFrame:
        """The run as a one-row tidy pandas.DataFrame with the columns of a sweep's frame:
        experiment (``"run"``), machine, workload, column (the kernel), threads, seed, metric,
        value, unit, higher_is_better, operations, oracle_violations, ``counters.<name>`` and
        ``attribution_ps.<bucket>`` (summed over the CPUs)."""
        import pandas as pd

        c, m = self["config"], self["metric"]
        row: Dict[str, Any] = {
            "experiment": "run", "machine": c["machine"], "workload": c["workload"], "column": c["kernel"],
            "threads": c["tasks"], "seed": c["seed"], "metric": m["name"], "value": m["value"],
            "unit": m["unit"], "higher_is_better": m["higher_is_better"],
            "operations": sum(self["iterations"]), "oracle_violations": self["oracle"]["violations"],
        }
        for k in sorted(self["counters"]):
            row[f"counters.{k}"] = self["counters"][k]
        buckets: Dict[str, int] = {}
        for cpu in self["attribution"]:
            for b, ps in cpu.items():
                buckets[b] = buckets.get(b, 0) + ps
        for b in sorted(buckets):
            row[f"attribution_ps.{b}"] = buckets[b]
        return pd.DataFrame([row])


def run(
    machine: str,
    workload: str,
    threads: Optional[int] = None,
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = _DEFAULTS["warmup"],
    seed: int = _DEFAULTS["seed"],
) -> RunResult:
    """One simulated run; returns a RunResult: exactly the dict ``tlblab run --json`` prints,
    with ``.to_frame()`` for its one tidy row.

    machine: a built-in machine (``tlblab.list()["machines"]``) or a profile file path.
    workload: ``tlb_flush1_threads`` etc., or ``"ebizzy"`` with ebizzy's options (``"ebizzy -m"``).
    threads: tasks (will-it-scale's ``-t``; ebizzy defaults to 2 x CPUs).
    kernel: a kernel preset (or a preset file path); ``set`` overrides its knobs ({"ceiling": 33}).
    param: workload parameters ({"alloc": "glibc-mmap"} for ebizzy).
    duration, warmup: simulated time: text with a unit ("5ms", "200us", "1s", "500ns"), a number
    of seconds (0.005) or a datetime.timedelta. duration defaults to the workload's.
    seed: the simulation's random seed.
    """
    machine, kernel = _check(machine, workload, kernel, set, param)
    _int("threads", threads, optional=True)
    _int("seed", seed)
    return RunResult(_native(
        _tlblab.run,
        machine,
        workload,
        threads,
        kernel,
        _pairs("set", set),
        _pairs("param", param),
        _duration("duration", duration),
        _duration("warmup", warmup),
        seed,
    ))


def sweep(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = _DEFAULTS["warmup"],
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    client: Any = None,
    retries: int = 2,
    progress: bool = True,
) -> pd.DataFrame:
    """The cross product of thread counts and varied values, as ``tlblab sweep``; returns a tidy
    pandas.DataFrame with one row per run: experiment, machine, workload, column (the column
    label, ``ceiling=33``), one column per varied knob, threads, seed, metric, value, unit,
    higher_is_better, operations, oracle_violations, ``counters.<name>`` (totals) and
    ``attribution_ps.<bucket>`` (simulated time summed over the CPUs). ``column`` and the knob
    columns are categoricals whose categories keep the order given in ``vary``.

    machine, workload, kernel, set, param, duration, warmup: as ``run``.
    threads: a task count or a list of them.
    vary: {knob: [values]}: ``kernel`` (presets), a kernel knob or a workload parameter.
    iterations: runs (seeds 1..N) per cell. jobs: host threads (default: all cores).
    out: a results directory as ``tlblab sweep --out`` writes (cells reused by a rerun, summary,
    report).
    client: a ``distributed.Client``: each (combination, thread count) cell runs as one task
    (``retries`` times more on error; a task on a worker that dies is rescheduled by Dask). The
    frame is identical to a local run. With ``out`` (a directory every worker can reach), the
    workers store the cells and this process writes the summary and report, reusing them.
    progress: a tqdm bar on standard error (runs done locally, cells done on Dask) when that is
    a terminal; False hides it.
    """
    machine, kernel = _check(machine, workload, kernel, set, param)
    _vary(vary, workload)
    if client is not None:
        cells = sweep_cells(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                            iterations, jobs, out)
        df = map_cells(client, cells, retries=retries, progress=progress)
        if out is not None:
            # Every cell is in the store now: this only writes the summary and report.
            _sweep_native(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                          iterations, jobs, out, True)
        return df
    with _bar(progress, "run") as bar:
        def tick(n: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            bar.update(n)

        table = _sweep_native(machine, workload, threads, vary, kernel, set, param, duration,
                              warmup, iterations, jobs, out, True, tick if not bar.disable else None)
    return _categorical(_frame(table))


def _sweep_native(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                  iterations, jobs, out, report, progress=None):
    return _native(
        _tlblab.sweep,
        machine,
        workload,
        _threads(threads),
        _vary(vary),
        kernel,
        _pairs("set", set),
        _pairs("param", param),
        _duration("duration", duration),
        _duration("warmup", warmup),
        _int("iterations", iterations),
        _int("jobs", jobs, optional=True),
        None if out is None else os.fspath(out),
        report,
        None,
        progress,
    )


def sweep_cells(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = _DEFAULTS["warmup"],
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
) -> List[Dict[str, Any]]:
    """A sweep split into its cells, in the sweep's order (combinations first axis slowest,
    thread counts inner): each is the keyword arguments of ``run_cell``. For running them on
    any scheduler; ``map_cells`` runs them on Dask.

    machine, workload, threads, vary, kernel, set, param, duration, warmup, iterations, jobs, out:
    as ``sweep`` (``out``: the store every cell writes to).
    """
    machine, kernel = _check(machine, workload, kernel, set, param)
    ts = _threads(threads)
    _vary(vary, workload)  # checks the shape and the names
    axes = [(k, [vs] if isinstance(vs, (str, int, float)) else builtins.list(vs)) for k, vs in vary.items()]
    cells = []
    for combo in itertools.product(*(vs for _, vs in axes)):
        for t in ts:
            cells.append(dict(machine=machine, workload=workload, threads=[t],
                              vary={k: [v] for (k, _), v in zip(axes, combo)}, kernel=kernel,
                              set=set, param=param, duration=duration, warmup=warmup,
                              iterations=iterations, jobs=jobs, out=out))
    return cells


def run_cell(**cell: Any) -> pd.DataFrame:
    """Runs one cell of ``sweep_cells``; returns its rows of the sweep's DataFrame (plain
    columns: ``map_cells`` makes the categoricals once every cell is in). With ``out`` the cell
    goes to the results store there (no summary or report)."""
    c = dict(cell)
    return _frame(_sweep_native(c["machine"], c["workload"], c["threads"], c["vary"], c["kernel"],
                                c["set"], c["param"], c["duration"], c["warmup"], c["iterations"],
                                c["jobs"], c["out"], False))


def _run_cell_kwargs(cell: Dict[str, Any]):
    return run_cell(**cell)


def map_cells(client: Any, cells: Sequence[Dict[str, Any]], fn: Optional[Callable[[Dict[str, Any]], Any]] = None,
              retries: int = 2, progress: bool = True) -> pd.DataFrame:
    """Runs ``cells`` (``sweep_cells``) on the Dask ``client``, one task each, and concatenates their frames in the
    cells' order (knob columns as categoricals in that order, as ``sweep``). ``fn`` (default:
    ``run_cell`` on the cell's arguments) must return the cell's frame. A task that raises is
    retried ``retries`` times; a task whose worker dies is rescheduled by the scheduler
    (``distributed.scheduler.allowed-failures``), and as every cell's result is gathered exactly
    once nothing is lost or counted twice. ``progress``: a tqdm bar of cells done on standard
    error when that is a terminal."""
    import pandas as pd
    from distributed import as_completed

    futures = client.map(fn or _run_cell_kwargs, builtins.list(cells), pure=False, retries=retries)
    with _bar(progress, "cell") as bar:
        bar.total = len(futures)
        if not bar.disable:
            for _ in as_completed(futures):
                bar.update(1)
        frames = client.gather(futures)
    return _categorical(_canonical(pd.concat(frames, ignore_index=True)))


def advise(
    machine: str,
    workload: str,
    threads: Optional[Union[int, Sequence[int]]] = None,
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = _DEFAULTS["warmup"],
    iterations: int = 3,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    client: Any = None,
    retries: int = 2,
    progress: bool = True,
) -> Dict[str, Any]:
    """Which kernel knob setting helps ``workload`` on ``machine``, as ``tlblab advise --json``
    prints it: the default run, the knobs whose mechanism it exercised, each swept over its values
    (``knobs``, with Welch's p and a bootstrap interval per thread count), the setting advised
    (``advice``, None when nothing beats the default significantly), and the attribution and
    counters that explain it.

    machine, workload, kernel, set, param, duration, warmup: as ``run``.
    threads: task counts (default: 1, half the CPUs and all of them).
    iterations: runs (seeds 1..N) per cell, 2 or more (the test needs a spread).
    jobs: host threads for local runs. out: a directory keeping every sweep's runs
    (``out/default``, ``out/<knob>``), which a rerun reuses.
    client: a ``distributed.Client``: every sweep's cells run on the cluster (as ``sweep(...,
    client=...)``, ``retries`` as there) into ``out``, which must then be a directory every worker
    can reach; the advice is computed from the stored runs and is the same as a local one.
    progress: a tqdm bar per sweep on Dask (local runs show none).
    """
    machine, kernel = _check(machine, workload, kernel, set, param)
    ts = None if threads is None else _threads(threads)
    if client is not None and out is None:
        raise ValueError("out: with a client, give a results directory every worker can reach")

    def on_dask(vary: List[str], sweep_threads: List[int], dir: str) -> None:
        # The sweep advise is about to run, run first on the cluster into its store: advise then
        # reuses every cell.
        axes = {}
        for v in vary:
            k, _, values = v.partition("=")
            axes[k] = values.split(",")
        sweep(machine, workload, sweep_threads, axes, kernel, set, param, duration, warmup,
              iterations, jobs, dir, client, retries, progress)

    return _native(
        _tlblab.advise,
        machine,
        workload,
        ts,
        kernel,
        _pairs("set", set),
        _pairs("param", param),
        _duration("duration", duration),
        _duration("warmup", warmup),
        _int("iterations", iterations),
        _int("jobs", jobs, optional=True),
        None if out is None else os.fspath(out),
        None if client is None else on_dask,
    )


def _existing_dir(name: str, path: Any) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{name}: expected a directory path, got {path!r}")
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(errno.ENOENT, f"{name}: no such result set directory", p)
    return p


def load(dir: PathLike) -> pd.DataFrame:
    """A saved result set (an experiment directory of ``reproduce --out``, an ``--out`` directory
    holding exactly one, or a ``sweep --out`` directory) as the same tidy DataFrame as ``sweep``,
    knob columns included (categoricals in the set's column order).

    dir: the directory; FileNotFoundError when it does not exist.
    """
    return _categorical(_frame(_native(_tlblab.load, _existing_dir("dir", dir))))


def reproduce(name: Optional[str] = None, out: Optional[PathLike] = None, quick: bool = False,
              jobs: Optional[int] = None) -> pd.DataFrame:
    """Runs a seed reproduction as ``tlblab reproduce`` does. Returns the tidy DataFrame of every
    run (the ``experiment`` column tells them apart); ``df.attrs["tables"]`` holds each
    experiment's table in its seed's layout.

    name: an experiment's name or prefix (e.g. "seed-000") or an experiment file; all when None.
    out: a directory to save ``out/<experiment>/`` in. quick: the short windows of ``--quick``.
    jobs: host threads (default: all cores).
    """
    import pandas as pd

    if name is not None:
        names = _known()["experiments"]
        if not isinstance(name, str):
            raise ValueError(f"name: expected an experiment name, prefix or .toml path, got {name!r}")
        if _is_path(name):
            if not os.path.exists(name):
                raise FileNotFoundError(errno.ENOENT, "name: no such experiment file", name)
        elif not any(n.startswith(name) for n in names):
            raise _unknown("name", "experiment", name, names, " (or a path to an experiment .toml)")
    sets = _native(_tlblab.reproduce, name, None if out is None else os.fspath(out), quick, jobs)
    df = _categorical(_canonical(pd.concat([_frame(s) for s in sets], ignore_index=True)))
    df.attrs["tables"] = {s["name"]: s["table"] for s in sets}
    return df


def list() -> Dict[str, Any]:  # noqa: A001 (the CLI's name)
    """What this build knows, as ``tlblab list`` prints it: machines, workloads, kernel presets,
    knobs, ebizzy parameters and experiments."""
    return _native(_tlblab.list)
