import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def tlblab_bin():
    """The CLI scripts/test.sh built before pytest (TLBLAB_BIN), else target/release/tlblab."""
    p = pathlib.Path(os.environ.get("TLBLAB_BIN", ROOT / "target" / "release" / "tlblab"))
    if not p.is_file():
        pytest.fail(f"{p} not found: build it with `cargo build --release -p tlblab` or set TLBLAB_BIN")
    return str(p)


@pytest.fixture
def root():
    return ROOT
