"""Every input path of the command line has a byte bound enforced while reading (issue 16, defect 2).

``/dev/zero`` and ``yes |`` never end: a command that read everything before checking would run until the
address-space limit these subprocesses get (1.5 GiB) killed it with a MemoryError (exit 1). Bounded, each
stops after limit + 1 bytes: exit 2, one line naming the limit, nothing created.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter.bounded import IMPORT_MAX_BYTES, read_source, read_stream
from graymatter.errors import InvalidInput
from support.env import hermetic_env

ADDRESS_SPACE = 1536 * 1024 * 1024


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(store: Path, *args: str, stdin_from: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``graymatter --dir STORE ARGS`` in a memory-limited subprocess, stdin fed by ``stdin_from``."""
    feeder = subprocess.Popen(stdin_from, stdout=subprocess.PIPE) if stdin_from else None
    try:
        return subprocess.run(
            [sys.executable, "-m", "graymatter", "--dir", str(store), *args],
            stdin=feeder.stdout if feeder else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            env=hermetic_env(),
            preexec_fn=_limit_memory,
        )
    finally:
        if feeder is not None:
            feeder.kill()
            feeder.wait()


@pytest.mark.parametrize(
    ("args", "feeder", "limit"),
    [
        (("checkpoint", "save", "s", "--state", "@/dev/zero"), None, "16777216"),
        (("checkpoint", "save", "s", "--state", "-"), ["yes"], "16777216"),
        (("checkpoint", "save", "s", "--metadata", "@/dev/zero"), None, "16777216"),
        (("import", "/dev/zero"), None, str(IMPORT_MAX_BYTES)),
        (("import", "-"), ["yes"], str(IMPORT_MAX_BYTES)),
        (("remember", "a", "-"), ["yes"], "65536"),
    ],
    ids=["state-dev-zero", "state-yes", "metadata-dev-zero", "import-dev-zero", "import-yes", "remember-yes"],
)
def test_endless_input_stops_at_its_bound(
    tmp_path: Path, args: tuple[str, ...], feeder: list[str] | None, limit: str
) -> None:
    store = tmp_path / "store"
    proc = _run(store, *args, stdin_from=feeder)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"is over {limit} bytes; the limit is {limit} bytes (reading stopped)" in lines[0]
    assert not store.exists()  # refused before the store was opened


def test_input_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"step": 3}', encoding="utf-8")
    store = tmp_path / "store"
    saved = _run(store, "--json", "checkpoint", "save", "s", "--state", f"@{state}")
    assert saved.returncode == 0, saved.stderr
    resumed = _run(store, "--json", "checkpoint", "resume", "s")
    assert '"step": 3' in resumed.stdout


def test_read_stream_bounds_exactly(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_source(str(path), 10, "thing") == "x" * 10
    with pytest.raises(InvalidInput, match="thing is over 9 bytes; the limit is 9 bytes"):
        read_source(str(path), 9, "thing")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidInput, match="thing is not UTF-8 text"):
        read_source(str(path), 10, "thing")
    with pytest.raises(InvalidInput, match=r"cannot read thing .*: No such file"):
        read_source(str(tmp_path / "missing"), 10, "thing")
    with open("/dev/zero", "rb") as zero, pytest.raises(InvalidInput):
        read_stream(zero, 1 << 20, "zeros")
