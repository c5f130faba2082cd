"""`make bench` outside the CI layout: a benchmark whose data set is absent is skipped with a pointer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.env import hermetic_env

ROOT = Path(__file__).resolve().parents[2]


def test_locomo_without_its_data_is_skipped_not_failed(tmp_path: Path) -> None:
    env = hermetic_env(
        GRAYMATTER_LOCOMO_PATH=str(tmp_path / "absent.json"),
        GRAYMATTER_BENCH_RESULTS=str(tmp_path / "results"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "locomo", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"locomo: skipped (LoCoMo data not found at {tmp_path / 'absent.json'}" in proc.stdout
    assert "set GRAYMATTER_LOCOMO_PATH" in proc.stdout and "Traceback" not in proc.stderr
