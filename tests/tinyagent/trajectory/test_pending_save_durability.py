"""The save before a tool batch fsyncs the file's data but not the rename; every other save fsyncs both."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tinyagent.trajectory.atomic import write_private_atomic


def _fsynced_kinds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    kinds: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        kinds.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return kinds


@pytest.mark.parametrize(("sync_directory", "expected"), [(True, ["file", "dir"]), (False, ["file"])])
def test_the_rename_is_fsynced_unless_asked_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_directory: bool, expected: list[str]
) -> None:
    target = tmp_path / "run.json"
    target.write_bytes(b"old")
    kinds = _fsynced_kinds(monkeypatch)
    write_private_atomic(target, b"new", sync_directory=sync_directory)
    assert kinds == expected
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_file_published_with_link_always_fsyncs_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = _fsynced_kinds(monkeypatch)
    write_private_atomic(tmp_path / "new.json", b"x", no_clobber=True, sync_directory=False)
    assert kinds == ["file", "dir"]
