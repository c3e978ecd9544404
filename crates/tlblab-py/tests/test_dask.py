"""Sweeps on a Dask LocalCluster: the same frame as a local run, and a worker that dies mid-task
loses nothing."""

import os

import pandas as pd
import pytest

import tlblab

distributed = pytest.importorskip("distributed")

SMALL = dict(machine="haswell-ep-2s", workload="tlb_flush1_threads", duration="50us", warmup="10us")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_sweep_equals_the_local_sweep(client, tmp_path):
    args = dict(SMALL, threads=[1, 2, 4], vary={"ceiling": [0, 33], "kernel": ["5.18.1", "5.18.1+patch"]},
                iterations=2)
    local = tlblab.sweep(**args)
    out = tmp_path / "shared"
    remote = tlblab.sweep(client=client, out=out, **args)
    pd.testing.assert_frame_equal(local, remote)
    # The workers stored every cell; this process wrote the summary and report from them.
    assert (out / "summary.json").is_file() and (out / "index.html").is_file()
    pd.testing.assert_frame_equal(local, tlblab.load(out))


def _dies_once(cell, marker):
    """Kills its worker process the first time it runs the cell (2 threads, ceiling 64): the
    nanny starts a new worker and the scheduler reschedules the task. (One death only: every
    task queued on a dying worker counts it, and the scheduler gives up after
    `allowed-failures`, 3 by default.)"""
    path = os.path.join(marker, "died")
    if (cell["threads"][0], cell["vary"]["ceiling"][0]) == (2, 64) and not os.path.exists(path):
        open(path, "w").close()
        os._exit(1)
    return tlblab.run_cell(**cell)


def test_a_killed_worker_loses_and_duplicates_nothing(client, tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(__import__(__name__))
    cells = tlblab.sweep_cells(threads=[1, 2], vary={"ceiling": [0, 64]}, **SMALL)
    marker = str(tmp_path)
    df = tlblab.map_cells(client, cells, fn=lambda c: _dies_once(c, marker))
    local = tlblab.sweep(threads=[1, 2], vary={"ceiling": [0, 64]}, **SMALL)
    pd.testing.assert_frame_equal(local, df)
    assert os.listdir(marker) == ["died"]  # the first attempt did kill its worker


def test_dask_sweep_shows_cells_done(client, monkeypatch):
    import io

    from tqdm import tqdm

    shown = io.StringIO()
    monkeypatch.setattr(tlblab, "_bar", lambda progress, unit: tqdm(file=shown, disable=not progress, unit=unit))
    df = tlblab.sweep(client=client, threads=[1, 2], vary={"ceiling": [0, 33, 64]}, **SMALL)
    assert "6/6" in shown.getvalue() and "cell" in shown.getvalue()
    assert df["ceiling"].cat.categories.tolist() == [0, 33, 64]


ADVISE = dict(machine="haswell-ep-2s", workload="tlb_flush1_threads", kernel="5.18.1", threads=[1, 4],
              duration="50us", warmup="10us", iterations=2)


def test_dask_advise_equals_the_local_advise(client, tmp_path):
    local = tlblab.advise(**ADVISE)
    remote = tlblab.advise(client=client, out=tmp_path / "shared", **ADVISE)
    assert remote == local
    # Every sweep advise ran went through the cluster into the store: the default and each
    # applicable knob, each a result set of its own.
    swept = sorted(p.name for p in (tmp_path / "shared").iterdir())
    assert swept == sorted(["default"] + [k["knob"] for k in local["knobs"]])
    assert all((tmp_path / "shared" / d / "summary.json").is_file() for d in swept)
    assert {k["knob"] for k in local["knobs"]} >= {"ceiling", "coalesce_ipis"}


def test_dask_advise_needs_a_shared_directory(client):
    with pytest.raises(ValueError, match="^out: with a client"):
        tlblab.advise(client=client, **ADVISE)
