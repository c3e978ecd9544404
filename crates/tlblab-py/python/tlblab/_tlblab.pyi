"""Type stubs of the native module; each function returns JSON text (see tlblab/__init__.py)."""

from typing import Any, Callable, Dict, List, Optional, Union

__version__: str
DEFAULTS: Dict[str, Union[str, int]]
"""The defaults of an omitted kernel, warmup and seed (the CLI's)."""

def run(
    machine: str,
    workload: str,
    threads: Optional[int] = None,
    kernel: Optional[str] = None,
    set: List[str] = ...,
    param: List[str] = ...,
    duration: Optional[str] = None,
    warmup: Optional[str] = None,
    seed: Optional[int] = None,
) -> str:
    """One simulated run; the RunResult as `tlblab run --json` prints it. Releases the GIL."""

def sweep(
    machine: str,
    workload: str,
    threads: List[int],
    vary: List[str],
    kernel: Optional[str] = None,
    set: List[str] = ...,
    param: List[str] = ...,
    duration: Optional[str] = None,
    warmup: Optional[str] = None,
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[str] = None,
    report: bool = True,
    shard: Optional[str] = None,
    progress: Optional[Callable[[int, int], Any]] = None,
) -> str:
    """A sweep; `{"columns", "rows"}` of the tidy table, or for a shard `{"ran", "reused", "skipped"}`.
    `progress(n, total)` is called as runs finish (n just finished of total)."""

def advise(
    machine: str,
    workload: str,
    threads: Optional[List[int]] = None,
    kernel: Optional[str] = None,
    set: List[str] = ...,
    param: List[str] = ...,
    duration: Optional[str] = None,
    warmup: Optional[str] = None,
    iterations: int = 3,
    jobs: Optional[int] = None,
    out: Optional[str] = None,
    prefill: Optional[Callable[[List[str], List[int], str], Any]] = None,
) -> str:
    """`tlblab advise --json`. `prefill(vary, threads, dir)` is called (with the GIL) before each
    sweep with `out`'s subdirectory it will run in; what it stores there is reused."""

def load(dir: str) -> str:
    """A saved result set as `{"columns", "rows"}`."""

def reproduce(
    name: Optional[str] = None, out: Optional[str] = None, quick: bool = False, jobs: Optional[int] = None
) -> str:
    """Seed reproductions: a list of `{"name", "table", "columns", "rows"}`."""

def list() -> str:
    """Machines, workloads, kernel presets, knobs, ebizzy parameters, experiments."""
