import subprocess
import sys


def test_ceiling_sweep_example_runs_and_plots(root, tmp_path):
    png = tmp_path / "ceiling.png"
    p = subprocess.run([sys.executable, str(root / "examples" / "ceiling_sweep.py"), "--out", str(png)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"wrote {png}" in p.stdout
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
