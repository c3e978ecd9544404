"""tlblab from Python: simulated runs, sweeps and seed reproductions as dicts and pandas
DataFrames.

The simulations run in Rust (the same library as the ``tlblab`` command; the GIL is released
while they run), so results are byte-for-byte the CLI's and the same for any number of threads.
Every bad argument raises ``ValueError`` with the CLI's message, which names the allowed values.

    >>> import tlblab
    >>> r = tlblab.run("haswell-ep-2s", "tlb_flush1_threads", threads=4, kernel="5.18.1+patch")
    >>> df = tlblab.sweep("ivybridge-4c8t", "ebizzy", threads=[1, 2, 4],
    ...                   vary={"ceiling": [0, 33, 128]}, iterations=3)

A sweep's cells can run on a Dask cluster: ``tlblab.sweep(..., client=distributed.Client(...))``
gives the same DataFrame as a local run (see ``sweep``).
"""

from __future__ import annotations

import builtins
import itertools
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _tlblab

__all__ = ["run", "sweep", "load", "reproduce", "list", "sweep_cells", "run_cell", "map_cells"]
__version__ = _tlblab.__version__
# The CLI's defaults (kernel preset, warm-up, seed), written once in Rust (tlblab::spec).
_DEFAULTS = _tlblab.DEFAULTS

Value = Union[str, int, float]
PathLike = Union[str, "os.PathLike[str]"]


def _native(fn: Callable[..., str], *args: Any, **kwargs: Any) -> Any:
    """Calls a native function; a wrong argument type (TypeError from the conversion) becomes
    ValueError like every other bad argument."""
    try:
        return json.loads(fn(*args, **kwargs))
    except TypeError as e:
        raise ValueError(str(e)) from None


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


def _vary(vary: Any) -> List[str]:
    if not isinstance(vary, Mapping) or not vary:
        raise ValueError(
            "vary: expected a dict {knob: [values]}: `kernel`, a kernel knob (tlblab.list()['knobs']) "
            "or a workload parameter"
        )
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


def run(
    machine: str,
    workload: str,
    threads: Optional[int] = None,
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[str] = None,
    warmup: str = _DEFAULTS["warmup"],
    seed: int = _DEFAULTS["seed"],
) -> Dict[str, Any]:
    """One simulated run; returns the RunResult exactly as ``tlblab run --json`` prints it.

    machine: a built-in machine (``tlblab.list()["machines"]``) or a profile file path.
    workload: ``tlb_flush1_threads`` etc., or ``"ebizzy"`` with ebizzy's options (``"ebizzy -m"``).
    threads: tasks (will-it-scale's ``-t``; ebizzy defaults to 2 x CPUs).
    kernel: a kernel preset; ``set`` overrides its knobs ({"ceiling": 33}).
    param: workload parameters ({"alloc": "glibc-mmap"} for ebizzy).
    duration, warmup: simulated time, "5ms", "200us", "1s".
    """
    _int("threads", threads, optional=True)
    _int("seed", seed)
    return _native(
        _tlblab.run,
        machine,
        workload,
        threads,
        kernel,
        _pairs("set", set),
        _pairs("param", param),
        duration,
        warmup,
        seed,
    )


def sweep(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[str] = None,
    warmup: str = _DEFAULTS["warmup"],
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    client: Any = None,
    retries: int = 2,
):
    """The cross product of thread counts and varied values, as ``tlblab sweep``; returns a tidy
    pandas.DataFrame with one row per run: experiment, machine, workload, column (the column
    label, ``ceiling=33``), one column per varied knob, threads, seed, metric, value, unit,
    higher_is_better, operations, oracle_violations, ``counters.<name>`` (totals) and
    ``attribution_ps.<bucket>`` (simulated time summed over the CPUs).

    vary: {knob: [values]}: ``kernel`` (presets), a kernel knob or a workload parameter.
    iterations: runs (seeds 1..N) per cell. jobs: host threads (default: all cores).
    out: a results directory as ``tlblab sweep --out`` writes (cells reused by a rerun, summary,
    report).
    client: a ``distributed.Client``: each (combination, thread count) cell runs as one task
    (``retries`` times more on error; a task on a worker that dies is rescheduled by Dask). The
    frame is identical to a local run. With ``out`` (a directory every worker can reach), the
    workers store the cells and this process writes the summary and report, reusing them.
    """
    if client is not None:
        cells = sweep_cells(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                            iterations, jobs, out)
        df = map_cells(client, cells, retries=retries)
        if out is not None:
            # Every cell is in the store now: this only writes the summary and report.
            _sweep_native(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                          iterations, jobs, out, True)
        return df
    return _frame(_sweep_native(machine, workload, threads, vary, kernel, set, param, duration,
                                warmup, iterations, jobs, out, True))


def _sweep_native(machine, workload, threads, vary, kernel, set, param, duration, warmup,
                  iterations, jobs, out, report):
    return _native(
        _tlblab.sweep,
        machine,
        workload,
        _threads(threads),
        _vary(vary),
        kernel,
        _pairs("set", set),
        _pairs("param", param),
        duration,
        warmup,
        _int("iterations", iterations),
        _int("jobs", jobs, optional=True),
        None if out is None else os.fspath(out),
        report,
        None,
    )


def sweep_cells(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = _DEFAULTS["kernel"],
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[str] = None,
    warmup: str = _DEFAULTS["warmup"],
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
) -> List[Dict[str, Any]]:
    """A sweep split into its cells, in the sweep's order (combinations first axis slowest,
    thread counts inner): each is the keyword arguments of ``run_cell``. For running them on
    any scheduler; ``map_cells`` runs them on Dask."""
    ts = _threads(threads)
    _vary(vary)  # checks the shape
    axes = [(k, [vs] if isinstance(vs, (str, int, float)) else builtins.list(vs)) for k, vs in vary.items()]
    cells = []
    for combo in itertools.product(*(vs for _, vs in axes)):
        for t in ts:
            cells.append(dict(machine=machine, workload=workload, threads=[t],
                              vary={k: [v] for (k, _), v in zip(axes, combo)}, kernel=kernel,
                              set=set, param=param, duration=duration, warmup=warmup,
                              iterations=iterations, jobs=jobs, out=out))
    return cells


def run_cell(**cell: Any):
    """Runs one cell of ``sweep_cells``; returns its rows of the sweep's DataFrame. With ``out``
    the cell goes to the results store there (no summary or report)."""
    c = dict(cell)
    return _frame(_sweep_native(c["machine"], c["workload"], c["threads"], c["vary"], c["kernel"],
                                c["set"], c["param"], c["duration"], c["warmup"], c["iterations"],
                                c["jobs"], c["out"], False))


def _run_cell_kwargs(cell: Dict[str, Any]):
    return run_cell(**cell)


def map_cells(client: Any, cells: Sequence[Dict[str, Any]], fn: Callable[[Dict[str, Any]], Any] = None,
              retries: int = 2):
    """Runs cells (``sweep_cells``) as Dask tasks, one each, and concatenates their frames in the
    cells' order. ``fn`` (default: ``run_cell`` on the cell's arguments) must return the cell's
    frame. A task that raises is retried ``retries`` times; a task whose worker dies is
    rescheduled by the scheduler (``distributed.scheduler.allowed-failures``), and as every cell's
    result is gathered exactly once nothing is lost or counted twice."""
    import pandas as pd

    futures = client.map(fn or _run_cell_kwargs, builtins.list(cells), pure=False, retries=retries)
    frames = client.gather(futures)
    return _canonical(pd.concat(frames, ignore_index=True))


def load(dir: PathLike):
    """A saved result set (an experiment directory of ``reproduce --out``, an ``--out`` directory
    holding exactly one, or a ``sweep --out`` directory) as the same tidy DataFrame as ``sweep``."""
    return _frame(_native(_tlblab.load, os.fspath(dir)))


def reproduce(name: Optional[str] = None, out: Optional[PathLike] = None, quick: bool = False,
              jobs: Optional[int] = None):
    """Runs a seed reproduction (name or prefix, e.g. "seed-000"; all when None) as ``tlblab
    reproduce`` does, saving ``out/<experiment>/`` when ``out`` is given. Returns the tidy
    DataFrame of every run (the ``experiment`` column tells them apart); ``df.attrs["tables"]``
    holds each experiment's table in its seed's layout."""
    import pandas as pd

    sets = _native(_tlblab.reproduce, name, None if out is None else os.fspath(out), quick, jobs)
    df = _canonical(pd.concat([_frame(s) for s in sets], ignore_index=True))
    df.attrs["tables"] = {s["name"]: s["table"] for s in sets}
    return df


def list() -> Dict[str, Any]:  # noqa: A001 (the CLI's name)
    """What this build knows, as ``tlblab list`` prints it: machines, workloads, kernel presets,
    knobs, ebizzy parameters and experiments."""
    return _native(_tlblab.list)
