"""Type stubs of the public API (tlblab/__init__.py); tests/test_stubs.py checks every signature
here against the code: parameter names, kinds, defaults and annotations. `...` stands for the
CLI's defaults, which come from the native module (tlblab._tlblab.DEFAULTS)."""

import datetime
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import pandas as pd

__version__: str
__all__: List[str]

Value = Union[str, int, float]
PathLike = Union[str, "os.PathLike[str]"]
Duration = Union[str, int, float, datetime.timedelta]

class RunResult(Dict[str, Any]):
    def to_frame(self) -> pd.DataFrame: ...

def run(
    machine: str,
    workload: str,
    threads: Optional[int] = None,
    kernel: str = ...,
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = ...,
    seed: int = ...,
) -> RunResult: ...
def sweep(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = ...,
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = ...,
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    client: Any = None,
    retries: int = 2,
    progress: bool = True,
) -> pd.DataFrame: ...
def advise(
    machine: str,
    workload: str,
    threads: Optional[Union[int, Sequence[int]]] = None,
    kernel: str = ...,
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = ...,
    iterations: int = 3,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    client: Any = None,
    retries: int = 2,
    progress: bool = True,
) -> Dict[str, Any]: ...
def sweep_cells(
    machine: str,
    workload: str,
    threads: Union[int, Sequence[int]],
    vary: Mapping[str, Union[Value, Sequence[Value]]],
    kernel: str = ...,
    set: Optional[Mapping[str, Value]] = None,
    param: Optional[Mapping[str, Value]] = None,
    duration: Optional[Duration] = None,
    warmup: Duration = ...,
    iterations: int = 1,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
) -> List[Dict[str, Any]]: ...
def run_cell(**cell: Any) -> pd.DataFrame: ...
def map_cells(
    client: Any,
    cells: Sequence[Dict[str, Any]],
    fn: Optional[Callable[[Dict[str, Any]], Any]] = None,
    retries: int = 2,
    progress: bool = True,
) -> pd.DataFrame: ...
def load(dir: PathLike) -> pd.DataFrame: ...
def reproduce(
    name: Optional[str] = None, out: Optional[PathLike] = None, quick: bool = False, jobs: Optional[int] = None
) -> pd.DataFrame: ...
def list() -> Dict[str, Any]: ...
