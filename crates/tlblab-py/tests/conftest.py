import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def tlblab_bin():
    """The CLI built by `cargo test --release` (scripts/test.sh builds it before pytest)."""
    p = pathlib.Path(os.environ.get("TLBLAB_BIN", ROOT / "target" / "release" / "tlblab"))
    if not p.is_file():
        pytest.fail(f"{p} not found: build it with `cargo build --release -p tlblab` or set TLBLAB_BIN")
    return str(p)


@pytest.fixture
def root():
    return ROOT
