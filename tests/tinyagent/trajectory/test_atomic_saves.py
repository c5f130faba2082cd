"""Atomic trajectory saves, shown deterministically (issue 16, gap 10).

* a save of ``run.json`` that fails while writing (a real EFBIG from a file-size limit) leaves that same
  ``run.json`` exactly as it was, and no temporary file;
* a saver SIGKILLed while its temporary file exists (the kill is triggered by seeing the file, not by a
  sleep) never leaves a partial ``run.json``: it is always one complete earlier or later version.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.env import hermetic_env

SAVER = """
import json, sys
from pathlib import Path
from tinyagent.trajectory.atomic import write_private_atomic
path, size = Path(sys.argv[1]), int(sys.argv[2])
version = 0
while True:
    version += 1
    write_private_atomic(path, json.dumps({"version": version, "pad": "x" * size}).encode())
    sys.stdout.write(f"{version}\\n")
    sys.stdout.flush()
"""

FAILING = """
import json, signal, sys
from pathlib import Path
from tinyagent.trajectory.atomic import SaveError, write_private_atomic
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
try:
    write_private_atomic(Path(sys.argv[1]), json.dumps({"version": 2, "pad": "y" * 200_000}).encode())
except SaveError as exc:
    print("refused:", exc)
"""


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))


def test_a_failed_save_of_the_same_file_keeps_it_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(json.dumps({"version": 1}).encode())
    before = path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", FAILING, str(path)],
        capture_output=True,
        text=True,
        env=hermetic_env(),
        timeout=60,
        preexec_fn=_limit_file_size,
    )
    assert proc.stdout.startswith("refused: cannot write"), (proc.stdout, proc.stderr)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def _wait_for_temporary(directory: Path, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if any(p.name.startswith(".run.json.") for p in directory.iterdir()):
            return True
    return False


def test_a_saver_killed_mid_write_never_leaves_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    landed = 0
    for life in range(10):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(path), str(4_000_000)],
            stdout=subprocess.PIPE,
            env=hermetic_env(),
        )
        assert proc.stdout is not None
        if life == 0:
            proc.stdout.readline()  # one complete version exists before the first kill
        for stale in tmp_path.glob(".run.json.*"):
            stale.unlink()  # left by the previous kill: only this life's temporary file may trigger
        if _wait_for_temporary(tmp_path, time.monotonic() + 60):
            landed += 1
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        document = json.loads(path.read_bytes())  # complete: never a torn or empty run.json
        assert document["version"] >= 1 and len(document["pad"]) == 4_000_000
    assert landed == 10  # every kill landed while a temporary file was being written
