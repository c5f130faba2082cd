"""The resume destination is created, never replaced: the first save publishes it with link(2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tinyagent.trajectory.atomic import SaveError, write_private_atomic
from tinyagent.trajectory.files import TrajectoryFile


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_no_clobber_creates_a_private_file(tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    write_private_atomic(target, b'{"a": 1}', no_clobber=True)
    assert target.read_bytes() == b'{"a": 1}'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert os.stat(target).st_nlink == 1
    assert _leftovers(tmp_path) == []


def test_no_clobber_refuses_an_existing_file_and_leaves_it_intact(tmp_path: Path) -> None:
    target = tmp_path / "taken.json"
    target.write_bytes(b"someone else's file")
    with pytest.raises(SaveError, match="refusing to overwrite an existing file"):
        write_private_atomic(target, b"ours", no_clobber=True)
    assert target.read_bytes() == b"someone else's file"
    assert _leftovers(tmp_path) == []


def test_destination_that_appears_after_start_up_is_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "continued.json"
    saver = TrajectoryFile(target, create_new=True)  # start-up: the path did not exist
    target.write_bytes(b"created by another process in the meantime")
    with pytest.raises(SaveError, match="refusing to overwrite"):
        saver.write(b"first checkpoint")
    assert target.read_bytes() == b"created by another process in the meantime"
    assert _leftovers(tmp_path) == []


def test_only_the_first_save_must_create(tmp_path: Path) -> None:
    target = tmp_path / "continued.json"
    saver = TrajectoryFile(target, create_new=True)
    saver.write(b"turn 0")
    saver.write(b"turn 1")  # later saves replace our own file atomically
    assert target.read_bytes() == b"turn 1"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert _leftovers(tmp_path) == []


def test_fresh_runs_still_replace_their_output(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_bytes(b"old run")
    TrajectoryFile(target).write(b"new run")
    assert target.read_bytes() == b"new run"
