import json
import subprocess
import threading
import time

import pandas as pd
import pytest

import tlblab

SMALL = dict(machine="haswell-ep-2s", workload="tlb_flush1_threads", duration="50us", warmup="10us")


def test_run_is_exactly_run_json(tlblab_bin):
    r = tlblab.run(threads=4, kernel="5.18.1+patch", set={"read_tlb_gen": "never"}, seed=3, **SMALL)
    cli = subprocess.run(
        [tlblab_bin, "run", "--machine", "haswell-ep-2s", "--workload", "tlb_flush1_threads", "--threads", "4",
         "--kernel", "5.18.1+patch", "--set", "read_tlb_gen=never", "--seed", "3", "--duration", "50us",
         "--warmup", "10us", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert r == json.loads(cli)
    assert r["config"]["seed"] == 3 and r["metric"]["name"] == "ops"


def test_omitted_arguments_take_the_clis_defaults(tlblab_bin):
    # No kernel, warm-up or seed on either side: both come from tlblab::spec's one set of defaults.
    r = tlblab.run("haswell-ep-2s", "tlb_flush1_threads", threads=2, duration="20us")
    cli = subprocess.run(
        [tlblab_bin, "run", "--machine", "haswell-ep-2s", "--workload", "tlb_flush1_threads", "--threads", "2",
         "--duration", "20us", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert r == json.loads(cli)
    assert r["config"]["kernel"] == tlblab._tlblab.DEFAULTS["kernel"]
    assert r["config"]["warmup_ps"] == 500_000_000 and tlblab._tlblab.DEFAULTS["warmup"] == "500us"


def test_the_gil_is_released_while_simulating():
    # A run of ~0.3 s or more in another thread: if it held the GIL, this loop could not advance.
    done = []
    t = threading.Thread(target=lambda: done.append(tlblab.run("skylake-sp-2s", "tlb_flush1_threads", threads=56,
                                                                duration="300us", warmup="10us")))
    t.start()
    spins, start = 0, time.monotonic()
    while t.is_alive():
        spins += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    assert done and elapsed > 0.05, f"the run took {elapsed:.3f} s: too short to tell"
    assert spins > 0.5 * elapsed / 0.002, (spins, elapsed)


def test_sweep_is_tidy_and_load_reads_it_back(tmp_path):
    out = tmp_path / "ceiling"
    df = tlblab.sweep(threads=[1, 2], vary={"ceiling": [0, 33]}, iterations=2, out=out, **SMALL)
    assert len(df) == 2 * 2 * 2
    assert list(df.columns[:7]) == ["experiment", "machine", "workload", "column", "ceiling", "threads", "seed"]
    assert df["ceiling"].tolist() == [0, 0, 0, 0, 33, 33, 33, 33]
    assert df["threads"].tolist() == [1, 1, 2, 2, 1, 1, 2, 2]
    assert "counters.ipis_sent" in df.columns and any(c.startswith("attribution_ps.") for c in df.columns)
    assert (df["value"] > 0).all()
    assert (out / "summary.json").is_file() and (out / "index.html").is_file()
    pd.testing.assert_frame_equal(df, tlblab.load(out))
    # The same rows the CLI's runs.csv holds.
    again = tlblab.sweep(threads=[1, 2], vary={"ceiling": [0, 33]}, iterations=2, **SMALL)
    pd.testing.assert_frame_equal(df, again)


def test_runs_csv_matches_the_frame(tmp_path, tlblab_bin):
    out = tmp_path / "s"
    df = tlblab.sweep(threads=[1, 2], vary={"ceiling": [1, 64]}, out=out, **SMALL)
    subprocess.run([tlblab_bin, "export", "--format", "csv", str(out)], check=True, capture_output=True)
    csv = pd.read_csv(out / "runs.csv")
    # The frame's knob columns are categoricals (in the order given); the CSV's are plain.
    plain = df.astype({c: df[c].cat.categories.dtype for c in ("column", "ceiling")})
    pd.testing.assert_frame_equal(plain, csv, check_dtype=False)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(machine="pentium-pro"), ["unknown machine `pentium-pro`", "haswell-ep-2s"]),
        (dict(vary={"bogus": [1, 2]}), ["vary: unknown knob `bogus`", "a kernel knob: ", "range_policy", "ceiling"]),
        (dict(set={"ceiling": "lots"}), ["ceiling"]),
        (dict(threads="two"), ["threads"]),
        (dict(threads=[1, 99]), ["threads 99", "allowed 1 ..= 72"]),
        (dict(kernel="9.9"), ["9.9", "5.18.1"]),
        (dict(duration="5"), ["duration", "unit"]),
        (dict(iterations="3"), ["iterations"]),
        (dict(iterations=0), ["iterations 0: allowed 1 ..= 1000"]),
        (dict(iterations=4294967295), ["iterations 4294967295: allowed 1 ..= 1000"]),
        (dict(duration="0.0001ns"), ["duration", "allowed 1ns ..= 1000s"]),
        (dict(duration="5 "), ["duration", "unit"]),
        (dict(vary={"ceiling": [0, 0]}), ["listed twice"]),
    ],
)
def test_bad_arguments_raise_value_error_with_the_allowed_values(tmp_path, kwargs, words):
    args = dict(SMALL, threads=[1], vary={"ceiling": [0, 33]}, out=tmp_path / "o")
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        tlblab.sweep(**args)
    for w in words:
        assert w in str(e.value), str(e.value)
    # Nothing half-written: no results directory at all.
    assert not (tmp_path / "o").exists()


def test_run_errors_too():
    with pytest.raises(ValueError, match="unknown workload `nope`"):
        tlblab.run("haswell-ep-2s", "nope", threads=1)
    with pytest.raises(ValueError, match="threads"):
        tlblab.run("haswell-ep-2s", "tlb_flush1_threads", threads=1.5)


def test_list_and_reproduce(tmp_path):
    known = tlblab.list()
    assert "haswell-ep-2s" in [m["name"] for m in known["machines"]]
    assert "ceiling" in known["knobs"] and "5.18.1" in known["kernel_presets"]
    df = tlblab.reproduce("seed-000-ebizzy", out=tmp_path, quick=True)
    assert set(df["experiment"]) == {"seed-000-ebizzy"}
    assert "Mean" in df.attrs["tables"]["seed-000-ebizzy"]
    assert (tmp_path / "seed-000-ebizzy" / "summary.json").is_file()
    pd.testing.assert_frame_equal(df, tlblab.load(tmp_path / "seed-000-ebizzy"))


def test_advise_is_exactly_advise_json(tlblab_bin):
    r = tlblab.advise(threads=[1, 4], kernel="5.18.1", iterations=2, **SMALL)
    cli = subprocess.run(
        [tlblab_bin, "advise", "--machine", "haswell-ep-2s", "--workload", "tlb_flush1_threads", "--threads", "1,4",
         "--kernel", "5.18.1", "--iterations", "2", "--duration", "50us", "--warmup", "10us", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert r == json.loads(cli)
    assert r["threads"] == [1, 4] and any(k["knob"] == "ceiling" for k in r["knobs"])
    with pytest.raises(ValueError, match="iterations 1: allowed 2"):
        tlblab.advise(threads=[1], iterations=1, **SMALL)
