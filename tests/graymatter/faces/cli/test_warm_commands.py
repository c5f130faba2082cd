"""Short commands served by the warm server (faces/cli/warm_commands.py, ADR 0010): real processes, a real
warm server in a private socket directory per test.

* A command is run by a forked child of the warm server on the caller's own stdin (seen in ``/proc``).
* Every command line below prints the same stdout and stderr and exits with the same code through the
  warm server as in-process (``GRAYMATTER_MCP_WARM=0``), errors and ``--json`` included, and writes the
  same facts.
* With no warm server, a short command runs in-process and launches one; with ``GRAYMATTER_MCP_WARM=0`` it
  launches none; other commands never relay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter.faces.cli import warm_commands
from support.env import hermetic_env
from support.warm import alive, connects, lock_pid, private_runtime, warm_server_pid, warm_socket

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def runtime() -> Iterator[Path]:
    yield from private_runtime("gmc-")


def _env(runtime: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return hermetic_env(tmp_path / "state", XDG_RUNTIME_DIR=str(runtime), **extra)


def _run(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "graymatter", *args], input=stdin, capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                found.append(int(entry.name))
    return found


def test_a_short_command_is_run_by_a_child_of_the_warm_server(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime, tmp_path)
    warm = warm_server_pid(runtime, env)
    store = tmp_path / "gm"
    command = [sys.executable, "-m", "graymatter", "--dir", str(store), "remember", "bot", "-"]
    relay = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert relay.stdin is not None
    pipe = os.fstat(relay.stdin.fileno()).st_ino
    deadline = time.monotonic() + 60
    child = None
    while child is None and time.monotonic() < deadline:  # the child waits on the caller's stdin
        for pid in _children(warm):
            try:
                if os.stat(f"/proc/{pid}/fd/0").st_ino == pipe:
                    child = pid
            except OSError:
                continue
        time.sleep(0.02)
    out, err = relay.communicate(b"The relay passes descriptors", timeout=60)
    assert child is not None, "no child of the warm server held the caller's stdin"
    assert relay.returncode == 0, err
    assert out.decode().startswith("Stored fact ")
    code, listed, _ = _run(env, "--dir", str(store), "list", "bot")
    assert code == 0 and "The relay passes descriptors" in listed


COMMAND_LINES: list[tuple[tuple[str, ...], str | None]] = [
    (("recall", "bot", "when do we deploy?"), None),
    (("--json", "recall", "bot", "deploy", "--explain"), None),
    (("recall", "bot", "deploy", "--top-k", "1", "--quiet"), None),
    (("list", "bot"), None),
    (("stats",), None),
    (("agents", "--json"), None),
    (("checkpoint", "resume", "bot"), None),
    (("checkpoint", "list", "bot", "--json"), None),
    (("recall", "nobody", "x"), None),  # unknown agent: exit 3, one line
    (("--json", "recall", "nobody", "x"), None),
    (("recall", "bot"), None),  # usage error from the parser: exit 2
    (("recal", "bot", "x"), None),  # not a warm command: the parser's "did you mean"
    (("checkpoint", "save", "bot", "--state", "{not json"), None),
    (("remember", "bot", "-"), ""),  # blank text from stdin
    (("recall", "bot", "x", "--top-k", "0"), None),
]


ACCESS_FIELDS = ("accessed_at", "access_count", "age_days")
"""What every recall changes: the second of two identical recalls sees the first one's access."""


def _without_access_times(result: tuple[int, str, str]) -> tuple[int, object, str]:
    code, out, err = result
    try:
        parsed = json.loads(out)
    except ValueError:
        return code, out, err

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ACCESS_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return code, strip(parsed), err


def test_warm_and_in_process_command_lines_answer_alike(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime, tmp_path)
    cold = {**env, "GRAYMATTER_MCP_WARM": "0"}
    store = tmp_path / "gm"
    for text in ("Deploys happen on Tuesdays", "The staging database is refreshed nightly"):
        assert _run(cold, "--dir", str(store), "remember", "bot", text)[0] == 0
    assert _run(cold, "--dir", str(store), "checkpoint", "save", "bot", "--state", '{"step": 3}')[0] == 0
    warm = warm_server_pid(runtime, env)
    for args, stdin in COMMAND_LINES:
        line = ("--dir", str(store), *args)
        expected = _run(cold, *line, stdin=stdin)
        got = _run(env, *line, stdin=stdin)
        assert _without_access_times(got) == _without_access_times(expected), args
    assert (
        alive(warm) and connects(warm_socket(runtime)) and lock_pid(warm_socket(runtime).with_suffix(".lock"))
    )


def test_writes_through_the_warm_server_store_what_in_process_writes_store(
    runtime: Path, tmp_path: Path
) -> None:
    env = _env(runtime, tmp_path)
    warm_server_pid(runtime, env)
    for mode, store in (("1", tmp_path / "warm"), ("0", tmp_path / "cold")):
        run_env = {**env, "GRAYMATTER_MCP_WARM": mode}
        base = ("--dir", str(store))
        assert (
            _run(run_env, *base, "remember", "bot", "Deploys happen on Tuesdays", "--session", "s1")[0] == 0
        )
        assert _run(run_env, *base, "remember", "bot", "-", stdin="Acme is on the Enterprise plan")[0] == 0
        assert (
            _run(run_env, *base, "revise", "bot", "Deploys happen on Tuesdays", "Deploys happen on Fridays")[
                0
            ]
            == 0
        )
        assert _run(run_env, *base, "pin", "bot", "Acme is on the Enterprise plan")[0] == 0
    counts = [
        [
            {k: v for k, v in agent.items() if not k.endswith("_at")}
            for agent in json.loads(_run(env, "--dir", str(tmp_path / name), "--json", "stats")[1])["agents"]
        ]
        for name in ("warm", "cold")
    ]
    assert (
        counts[0] == counts[1] and counts[0][0]["superseded_count"] == 1 and counts[0][0]["pinned_count"] == 1
    )
    texts = [
        _run(env, "--dir", str(tmp_path / name), "--quiet", "recall", "bot", "deploys acme")[1]
        for name in ("warm", "cold")
    ]
    assert texts[0] == texts[1] and "Fridays" in texts[0] and "Tuesdays" not in texts[0]


def test_a_short_command_without_a_warm_server_runs_here_and_launches_one(
    runtime: Path, tmp_path: Path
) -> None:
    env = _env(runtime, tmp_path)
    code, _, err = _run(env, "--dir", str(tmp_path / "gm"), "remember", "bot", "Deploys happen on Tuesdays")
    assert code == 0, err
    deadline = time.monotonic() + 90
    while not connects(warm_socket(runtime)):
        assert time.monotonic() < deadline, "no warm server was launched"
        time.sleep(0.05)


@pytest.mark.parametrize("args", [("--version",), ("agents",), ("doctor", "--help")])
def test_switched_off_or_other_commands_launch_no_warm_server(
    runtime: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    env = _env(runtime, tmp_path, GRAYMATTER_MCP_WARM="0" if args == ("agents",) else "1")
    _run(env, "--dir", str(tmp_path / "gm"), *args)
    time.sleep(1.0)  # a launched server would have created its directory by now
    assert not (runtime / "graymatter").exists() or not any((runtime / "graymatter").iterdir())


def test_the_warm_commands_are_commands_of_the_parser() -> None:
    from graymatter.faces.cli.parser import COMMANDS

    assert set(COMMANDS) >= warm_commands.WARM_COMMANDS
    assert not warm_commands.WARM_COMMANDS & {
        "mcp",
        "serve",
        "ui",
        "hook",
        "init",
        "import",
        "export",
        "demo",
    }


@pytest.mark.parametrize("value", ["0", "false", " Off ", "NO", "1", "yes", "true", "", "2"])
def test_the_fast_paths_read_the_switch_as_the_warm_server_does(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graymatter.faces.mcp_server.warm_paths import WARM_ENV, warm_enabled

    monkeypatch.setenv(WARM_ENV, value)
    assert warm_commands.warm_enabled() is warm_enabled()
