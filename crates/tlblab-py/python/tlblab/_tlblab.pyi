"""Type stubs of the native module; each function returns JSON text (see tlblab/__init__.py)."""

from typing import List, Optional

__version__: str

def run(
    machine: str,
    workload: str,
    threads: Optional[int] = None,
    kernel: str = "5.18.1",
    set: List[str] = ...,
    param: List[str] = ...,
    duration: Optional[str] = None,
    warmup: str = "500us",
    seed: int = 1,
) -> str:
    """One simulated run; the RunResult as `tlblab run --json` prints it. Releases the GIL."""

def sweep(
    machine: str,
    workload: str,
    threads: List[int],
    vary: List[str],
    kernel: str = "5.18.1",
    set: List[str] = ...,
    param: List[str] = ...,
    duration: Optional[str] = None,
    warmup: str = "500us",
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[str] = None,
    report: bool = True,
    shard: Optional[str] = None,
) -> str:
    """A sweep; `{"columns", "rows"}` of the tidy table, or for a shard `{"ran", "reused", "skipped"}`."""

def load(dir: str) -> str:
    """A saved result set as `{"columns", "rows"}`."""

def reproduce(
    name: Optional[str] = None, out: Optional[str] = None, quick: bool = False, jobs: Optional[int] = None
) -> str:
    """Seed reproductions: a list of `{"name", "table", "columns", "rows"}`."""

def list() -> str:
    """Machines, workloads, kernel presets, knobs, ebizzy parameters, experiments."""
