"""What a Python user meets: run's result as a frame, knob columns in the order given, progress
bars, errors that name the parameter and the nearest valid name, durations as numbers."""

import datetime
import io

import pandas as pd
import pytest
from tqdm import tqdm

import tlblab
from tlblab import _tlblab

SMALL = dict(machine="haswell-ep-2s", workload="tlb_flush1_threads", duration="50us", warmup="10us")


def test_run_to_frame_is_the_sweeps_row():
    r = tlblab.run(threads=2, kernel="5.18.1", seed=1, **SMALL)
    assert isinstance(r, dict) and r["config"]["seed"] == 1
    row = r.to_frame()
    assert len(row) == 1 and row.loc[0, "column"] == "5.18.1" and row.loc[0, "threads"] == 2
    sw = tlblab.sweep(threads=[2], vary={"kernel": ["5.18.1"]}, iterations=1, progress=False, **SMALL)
    same = [c for c in row.columns if c not in ("experiment", "column")]
    assert set(same) <= set(sw.columns)
    pd.testing.assert_frame_equal(row[same], sw[same], check_dtype=False)


def test_knob_columns_keep_the_order_given(tmp_path):
    out = tmp_path / "s"
    df = tlblab.sweep(threads=[1], vary={"ceiling": [64, 0, 33], "kernel": ["5.18.1+patch", "5.18.1"]},
                      out=out, progress=False, **SMALL)
    assert df["ceiling"].cat.categories.tolist() == [64, 0, 33]
    assert df["kernel"].cat.categories.tolist() == ["5.18.1+patch", "5.18.1"]
    assert df["column"].cat.categories.tolist()[0] == "ceiling=64,kernel=5.18.1+patch"
    means = df.groupby("ceiling", observed=True)["value"].mean()
    assert means.index.tolist() == [64, 0, 33]
    back = tlblab.load(out)
    assert back["ceiling"].cat.categories.tolist() == [64, 0, 33]
    pd.testing.assert_frame_equal(df, back)


def test_native_progress_counts_every_run():
    calls = []
    _tlblab.sweep("haswell-ep-2s", "tlb_flush1_threads", [1, 2], ["ceiling=0,33"], duration="20us",
                  warmup="10us", iterations=2, progress=lambda n, total: calls.append((n, total)))
    assert sum(n for n, _ in calls) == 2 * 2 * 2
    assert {t for _, t in calls} == {8}


def test_sweep_shows_a_tqdm_bar_and_hides_it(monkeypatch, capfd):
    shown = []

    def bar(progress, unit):
        shown.append(io.StringIO())
        return tqdm(file=shown[-1], disable=not progress, unit=unit)

    monkeypatch.setattr(tlblab, "_bar", bar)
    tlblab.sweep(threads=[1, 2], vary={"ceiling": [0, 33]}, **SMALL)
    assert "4/4" in shown[-1].getvalue()
    tlblab.sweep(threads=[1, 2], vary={"ceiling": [0, 33]}, progress=False, **SMALL)
    assert shown[-1].getvalue() == ""
    # Under pytest standard error is no terminal: the real bar (and the CLI's) stays silent.
    monkeypatch.undo()
    tlblab.sweep(threads=[1], vary={"ceiling": [0]}, **SMALL)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: tlblab.run("haswel-ep-2s", "tlb_flush1_threads"), ["machine:", "did you mean `haswell-ep-2s`?"]),
        (lambda: tlblab.run("haswell-ep-2s", "tlb_flush1_thread"), ["workload:", "did you mean `tlb_flush1_threads`?"]),
        (lambda: tlblab.run("haswell-ep-2s", "ebizy"), ["workload:", "did you mean `ebizzy`?"]),
        (lambda: tlblab.run(kernel="5.18.1+patc", **SMALL), ["kernel:", "did you mean `5.18.1+patch`?"]),
        (lambda: tlblab.run(set={"ceilng": 3}, **SMALL), ["set:", "unknown knob `ceilng`", "did you mean `ceiling`?"]),
        (lambda: tlblab.run("haswell-ep-2s", "ebizzy", param={"chunk": 3}), ["param:", "did you mean `chunks`?"]),
        (lambda: tlblab.run(param={"chunks": 3}, **SMALL), ["param:", "takes no parameters"]),
        (lambda: tlblab.sweep(threads=1, vary={"ceilng": [1]}, **SMALL), ["vary:", "did you mean `ceiling`?"]),
        (lambda: tlblab.sweep(threads=[1, 99], vary={"ceiling": [1]}, **SMALL), ["threads 99:", "allowed 1 ..= 72"]),
        (lambda: tlblab.run(set={"ceiling": "lots"}, **SMALL), ["set ceiling=lots"]),
        (lambda: tlblab.reproduce("seed-002-tlbgen"), ["name:", "did you mean `seed-002-tlb-gen`?"]),
        (lambda: tlblab.run(**dict(SMALL, duration=[5])), ["duration:", "number of seconds"]),
    ],
)
def test_errors_name_the_parameter_and_the_nearest_name(call, words):
    with pytest.raises(ValueError) as e:
        call()
    for w in words:
        assert w in str(e.value), str(e.value)
    assert "--" not in str(e.value).split(";")[0], "a CLI flag, not the Python parameter"


def test_missing_paths_raise_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="dir"):
        tlblab.load(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="machine"):
        tlblab.run(str(tmp_path / "m.toml"), "tlb_flush1_threads")
    with pytest.raises(FileNotFoundError, match="kernel"):
        tlblab.run(**dict(SMALL, kernel=tmp_path / "k.toml"))
    with pytest.raises(FileNotFoundError, match="name"):
        tlblab.reproduce(str(tmp_path / "e.toml"))


def test_durations_as_text_seconds_or_timedelta():
    args = dict(SMALL, threads=2)
    text = tlblab.run(**args)
    args.pop("duration"), args.pop("warmup")
    secs = tlblab.run(duration=50e-6, warmup=1e-5, **args)
    delta = tlblab.run(duration=datetime.timedelta(microseconds=50), warmup=datetime.timedelta(microseconds=10),
                       **args)
    assert text == secs == delta
    assert text["config"]["measure_ps"] == 50_000_000
    with pytest.raises(ValueError, match="duration"):
        tlblab.run(duration=-1, **args)
