"""Every bad input of issue item 9, through the library and the CLI: a clear one-line error, a non-zero
exit, and the store byte-identical afterwards wherever the operation was refused."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.errors import (
    CorruptDatabase,
    InvalidInput,
    NoCheckpoint,
    SchemaTooNew,
    StoreUnavailable,
)

LIMIT = 64 * 1024
Cli = Callable[..., Any]
Snapshot = Callable[[Path], dict[str, bytes]]


def _seeded(gm_dir: Path) -> Path:
    with Memory(gm_dir, config=MemoryConfig(), embedder=None, summariser=None) as memory:
        for i in range(30):
            memory.remember("agent", f"seed fact number {i} about the deployment pipeline")
        memory.checkpoint_save("agent", {"step": 1})
    db = gm_dir / "graymatter.db"
    assert db.stat().st_size > 0
    return db


def _assert_one_line_error(result: Any, code: int, *needles: str) -> None:
    assert result.code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graymatter: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "code", "needle"),
    [
        (["remember", "   ", "some text"], None, 2, "agent_id is required"),
        (["remember", "", "some text"], None, 2, "agent_id is required"),
        (["remember", "agent", ""], None, 2, "text is empty"),
        (["remember", "agent", "  \n\t "], None, 2, "text is empty"),
        (
            ["remember", "agent", "-"],
            "x" * (LIMIT + 1),
            2,
            f"text is over {LIMIT} bytes; the limit is {LIMIT} bytes",
        ),
        (["remember", "agent", "-"], "é" * (LIMIT // 2 + 1), 2, f"the limit is {LIMIT} bytes"),
        (["recall", " ", "query"], None, 2, "agent_id is required"),
        (["checkpoint", "save", "agent", "--state", "[1, 2]"], None, 2, "state must be a JSON object"),
        (["checkpoint", "save", "agent", "--state", '"text"'], None, 2, "state must be a JSON object"),
        (["checkpoint", "save", "agent", "--state", "{broken"], None, 2, "state must be valid JSON"),
        (["checkpoint", "save", "agent", "--state", "NaN"], None, 2, "state must be"),
        (["checkpoint", "save", "agent", "--state", '{"n": ' + "1" * 5000 + "}"], None, 2, "valid JSON"),
        (["checkpoint", "save", "agent", "--state", "[" * 100_000], None, 2, "nested too deeply"),
        (["checkpoint", "resume", "agent", "01ARZ3NDEKTSV4RRFFQ69G5FAV"], None, 3, "no checkpoint"),
        (["checkpoint", "resume", "nobody"], None, 3, 'no checkpoints for agent "nobody"'),
        (["revise", "agent", "no such fact", "new"], None, 3, "target fact not found"),
        (["forget", "agent", "no such fact"], None, 3, "target fact not found"),
        (["recall", "agent", "q", "--top-k", "0"], None, 2, "top_k"),
        (["recall", "agent", "q", "--confidence-weight", "0.9"], None, 2, "confidence_weight"),
        (["import", "-"], '{"facts": 3}', 2, "not a graymatter JSON export"),
        (["import", "-"], "not json at all", 2, "not a graymatter JSON export"),
    ],
)
def test_cli_refuses_bad_input_and_leaves_store_identical(
    cli: Cli,
    gm_dir: Path,
    snapshot_dir: Snapshot,
    args: list[str],
    stdin: str | None,
    code: int,
    needle: str,
) -> None:
    _seeded(gm_dir)
    before = snapshot_dir(gm_dir)
    result = cli(*args, stdin=stdin)
    _assert_one_line_error(result, code, needle)
    assert snapshot_dir(gm_dir) == before


def test_json_mode_errors_are_one_json_line(cli: Cli, gm_dir: Path) -> None:
    _seeded(gm_dir)
    result = cli("--json", "remember", "agent", "")
    assert result.code == 2
    assert result.json() == {"error": {"code": "invalid_input", "message": "text is empty"}}
    result = cli("checkpoint", "resume", "nobody", "--json")
    assert result.code == 3 and result.json()["error"]["code"] == "no_checkpoint"


def test_usage_errors_are_one_line(cli: Cli) -> None:
    result = cli("recall")
    _assert_one_line_error(result, 2, "required")
    result = cli("no-such-command")
    _assert_one_line_error(result, 2, "unknown command")


def _check_refused_open(
    gm_dir: Path,
    cli: Cli,
    snapshot_dir: Snapshot,
    error: type[Exception],
    needle: str,
) -> None:
    before = snapshot_dir(gm_dir)
    with pytest.raises(error, match=needle):
        Memory(gm_dir, config=MemoryConfig(), embedder=None, summariser=None)
    for args in (["recall", "agent", "deployment"], ["remember", "agent", "new fact"], ["stats"]):
        _assert_one_line_error(cli(*args), 1, needle)
    assert snapshot_dir(gm_dir) == before


def test_garbage_database_file_is_refused_untouched(cli: Cli, gm_dir: Path, snapshot_dir: Snapshot) -> None:
    gm_dir.mkdir(mode=0o700)
    (gm_dir / "graymatter.db").write_bytes(b"this is not a database at all\n" * 100)
    _check_refused_open(gm_dir, cli, snapshot_dir, CorruptDatabase, "not a graymatter database")


def test_truncated_database_is_refused_untouched(cli: Cli, gm_dir: Path, snapshot_dir: Snapshot) -> None:
    db = _seeded(gm_dir)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 100])  # not a whole number of pages
    _check_refused_open(gm_dir, cli, snapshot_dir, CorruptDatabase, "truncated")


def test_page_aligned_truncation_is_refused_untouched(cli: Cli, gm_dir: Path, snapshot_dir: Snapshot) -> None:
    db = _seeded(gm_dir)
    data = db.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    db.write_bytes(data[: page * 2])
    _check_refused_open(gm_dir, cli, snapshot_dir, CorruptDatabase, "truncated")


def test_damaged_pages_report_corruption_without_changes(
    cli: Cli, gm_dir: Path, snapshot_dir: Snapshot
) -> None:
    db = _seeded(gm_dir)
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for offset in range(page, len(data), 7):  # scribble over every page after the header page
        data[offset] = 0xA5
    db.write_bytes(bytes(data))
    before = snapshot_dir(gm_dir)
    for args in (["recall", "agent", "deployment"], ["remember", "agent", "new fact"]):
        result = cli(*args)
        assert result.code == 1
        assert "corrupt" in result.stderr or "not a graymatter database" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot_dir(gm_dir) == before


def test_newer_schema_is_refused_untouched(cli: Cli, gm_dir: Path, snapshot_dir: Snapshot) -> None:
    db = _seeded(gm_dir)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    _check_refused_open(gm_dir, cli, snapshot_dir, SchemaTooNew, "newer graymatter")


def test_foreign_sqlite_database_is_refused_untouched(cli: Cli, gm_dir: Path, snapshot_dir: Snapshot) -> None:
    gm_dir.mkdir(mode=0o700)
    with sqlite3.connect(gm_dir / "graymatter.db") as conn:
        conn.execute("CREATE TABLE something_else (x)")
    conn.close()
    _check_refused_open(gm_dir, cli, snapshot_dir, CorruptDatabase, "not a graymatter one")


def test_file_where_the_directory_should_be(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "store"
    blocker.write_bytes(b"user data")
    with pytest.raises(StoreUnavailable, match="is not a directory"):
        Memory(blocker, config=MemoryConfig(), embedder=None)
    result = cli("--dir", str(blocker), "remember", "a", "text", use_dir=False)
    _assert_one_line_error(result, 1, "is not a directory")
    result = cli("--dir", str(blocker / "sub"), "remember", "a", "text", use_dir=False)
    _assert_one_line_error(result, 1, "is a file")
    assert blocker.read_bytes() == b"user data"


def _unwritable_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        target = tmp_path / "readonly"
        target.mkdir()
        target.chmod(0o500)
        return target
    candidate = Path("/sys")  # root ignores mode bits; sysfs refuses new files even for root
    probe = candidate / "graymatter-probe"
    try:
        probe.open("w").close()
    except OSError:
        return candidate
    probe.unlink(missing_ok=True)
    pytest.skip("no unwritable directory available to this user")


def test_unwritable_directory(cli: Cli, tmp_path: Path) -> None:
    target = _unwritable_dir(tmp_path)
    before = sorted(p.name for p in target.iterdir())
    with pytest.raises(StoreUnavailable, match="writable"):
        Memory(target, config=MemoryConfig(), embedder=None)
    result = cli("--dir", str(target), "remember", "a", "text", use_dir=False)
    _assert_one_line_error(result, 1, str(target), "writable")
    result = cli("--dir", str(target / "sub"), "remember", "a", "text", use_dir=False)
    _assert_one_line_error(result, 1, "cannot create data directory")
    assert sorted(p.name for p in target.iterdir()) == before


def test_library_bad_inputs_raise_typed_errors(mem: Memory) -> None:
    mem.remember("a", "existing")
    for agent in ("", "  ", None, 3):
        with pytest.raises(InvalidInput, match="agent_id is required"):
            mem.remember(agent, "text")  # type: ignore[arg-type]
    for text in ("", " ", None, b"bytes"):
        with pytest.raises(InvalidInput):
            mem.remember("a", text)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="65537 bytes"):
        mem.remember("a", "x" * (LIMIT + 1))
    for state in ([1], "[]", "3", "{oops", 5, {"x": float("nan")}, {"x": object()}):
        with pytest.raises(InvalidInput):
            mem.checkpoint_save("a", state)  # type: ignore[arg-type]
    with pytest.raises(NoCheckpoint):
        mem.checkpoint_get("a", "nope")
    with pytest.raises(InvalidInput):
        mem.alias("a", "term", [])
    with pytest.raises(InvalidInput):
        mem.alias("a", "term", "not-a-list")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        mem.link("a", " ", "b")
    assert [f.text for f in mem.list("a")] == ["existing"]
    assert mem.checkpoint_list("a") == []


def test_undecodable_fact_is_corrupt_record_not_absence(
    cli: Cli, gm_dir: Path, snapshot_dir: Snapshot
) -> None:
    from graymatter.errors import CorruptRecord, NotFound

    _seeded(gm_dir)
    with sqlite3.connect(gm_dir / "graymatter.db") as conn:
        conn.execute("UPDATE facts SET provenance = '{broken' WHERE text LIKE 'seed fact number 3 %'")
    conn.close()
    with Memory(gm_dir, config=MemoryConfig(), embedder=None) as memory:
        with pytest.raises(CorruptRecord) as info:
            memory.list("agent")
        assert not isinstance(info.value, NotFound)
        with pytest.raises(CorruptRecord):
            memory.recall("agent", "seed fact number 3", top_k=30)
    before = snapshot_dir(gm_dir)
    _assert_one_line_error(cli("list", "agent"), 1, "cannot be decoded")
    assert snapshot_dir(gm_dir) == before
