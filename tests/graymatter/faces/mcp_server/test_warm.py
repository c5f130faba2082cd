"""The warm MCP server and its relay, with real processes in a private socket directory per test.

* The first ``mcp serve`` serves in-process and starts the warm server; the next one is served by a forked
  child of the warm server on the relay's own stdio pipes (seen in ``/proc``), with the same answers.
* Exit codes and the one-line error of a failing serve are the same through the warm server.
* A relay killed with SIGKILL takes its child down; a warm server killed with SIGKILL leaves a stale
  socket that the next serve survives (in-process) and replaces; an unsafe socket directory disables the
  warm path; a request with the wrong key is refused without a handshake; an idle warm server exits.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter.faces.mcp_server.warm_paths import code_fingerprint
from support.mcp_session import initialize_request
from support.processes import graymatter_command, server_env
from support.warm import alive, connects, lock_pid, private_runtime, warm_server_pid, warm_socket

pytestmark = pytest.mark.timeout(120)

INIT = initialize_request()


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A private, short XDG_RUNTIME_DIR (socket paths are short); its warm servers are ended afterwards."""
    yield from private_runtime("gmw-")


def _wait_for(predicate: object, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _env(runtime: Path, **extra: str) -> dict[str, str]:
    return server_env(XDG_RUNTIME_DIR=str(runtime), **extra)


def _warm_session(
    runtime: Path, store: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], list, int]:
    """A session served by a child of the warm server: the relay, its answers and the child's pid."""
    for _attempt in range(10):
        warm_pid = warm_server_pid(runtime, env)
        process = _start(store, env)
        answers = _session(process)
        children = _children_of(warm_pid)
        if len(children) == 1:
            return process, answers, children[0]
        _finish(process)  # the code changed under the warm server: it was served in-process, try again
    raise AssertionError("no session was served by the warm server")


def _start(store: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        graymatter_command(store, "mcp", "serve"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _session(process: subprocess.Popen[bytes]) -> list[dict[str, object]]:
    """initialize, then a memory_add and a memory_search; the three answers, stdin left open."""
    assert process.stdin is not None and process.stdout is not None
    calls = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "memory_add", "arguments": {"agent_id": "w", "text": "The relay passes fds"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory_search", "arguments": {"agent_id": "w", "query": "relay"}}},
    ]  # fmt: skip
    answers = []
    for call in calls:
        process.stdin.write((json.dumps(call) + "\n").encode())
        process.stdin.flush()
        if "id" in call:
            answers.append(json.loads(process.stdout.readline()))
    return answers


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _finish(process: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    assert process.stdin is not None and process.stderr is not None
    process.stdin.close()
    code = process.wait(timeout=60)
    return code, process.stderr.read()


def _comparable(answers: list[dict[str, object]]) -> str:
    text = json.dumps(answers, sort_keys=True)
    for answer in answers[1:]:
        result = answer["result"]
        assert isinstance(result, dict)
        structured = result.get("structuredContent", {})
        for key in ("id", "created_at", "fact_id"):
            if isinstance(structured, dict):
                for fact in structured.get("facts", [structured]):
                    if key in fact:
                        text = text.replace(str(fact[key]), "<" + key + ">")
    return text


def test_second_serve_runs_in_a_child_of_the_warm_server(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime)
    first = _start(tmp_path / "a", env)
    cold = _session(first)
    assert _finish(first) == (0, b"")

    second, warm, child = _warm_session(runtime, tmp_path / "b", env)
    relay_stdin = os.readlink(f"/proc/{second.pid}/fd/0")
    assert relay_stdin.startswith("pipe:")
    child_fds = {os.readlink(fd) for fd in Path(f"/proc/{child}/fd").iterdir()}
    assert relay_stdin in child_fds  # the child serves the relay's own pipe (the SDK moves it off fd 0)
    assert _finish(second) == (0, b"")
    assert _comparable(warm) == _comparable(cold)
    _wait_for(lambda: not alive(child), "the child to exit")


def test_failing_serve_reads_the_same_through_the_warm_server(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime)
    command = [*graymatter_command(tmp_path, "mcp", "serve")]
    command[command.index("--dir") : command.index("--dir") + 2] = ["--store", "nosuch://x"]
    cold = subprocess.run(command, input=b"", capture_output=True, env=_env(runtime, GRAYMATTER_MCP_WARM="0"))
    warm_server_pid(runtime, env)
    warm = subprocess.run(command, input=b"", capture_output=True, env=env)
    assert cold.returncode != 0
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.stderr.count(b"\n") == 1


def test_killed_relay_takes_its_child_down(runtime: Path, tmp_path: Path) -> None:
    relay, _answers, child = _warm_session(runtime, tmp_path / "b", _env(runtime))
    relay.kill()
    relay.wait(timeout=30)
    _wait_for(lambda: not alive(child), "the orphaned child to exit")


def test_stale_socket_of_a_killed_warm_server_is_survived_and_replaced(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime)
    old = warm_server_pid(runtime, env)
    os.kill(old, signal.SIGKILL)
    _wait_for(lambda: not alive(old), "the warm server to die")
    (lock,) = [x for x in (runtime / "graymatter").glob("mcp-*.lock") if lock_pid(x) == old]
    stale = lock.with_suffix(".sock")
    assert stale.exists()
    assert not connects(stale)  # nobody listens

    process = _start(tmp_path / "b", env)
    assert "result" in _session(process)[0]  # served in-process
    assert _finish(process) == (0, b"")
    new = warm_server_pid(runtime, env)
    assert new != old and alive(new)


def test_unsafe_socket_directory_disables_the_warm_path(runtime: Path, tmp_path: Path) -> None:
    (runtime / "graymatter").mkdir(mode=0o755)
    os.chmod(runtime / "graymatter", 0o755)
    process = _start(tmp_path / "a", _env(runtime))
    assert "result" in _session(process)[0]
    assert _finish(process) == (0, b"")
    time.sleep(1.0)  # a warm server, had one been started, would have created its lock file by now
    assert list((runtime / "graymatter").iterdir()) == []


def test_request_with_another_key_gets_no_handshake(runtime: Path, tmp_path: Path) -> None:
    warm_pid = warm_server_pid(runtime, _env(runtime))
    header = {"key": "0" * 16, "argv": ["mcp", "serve"], "cwd": "/", "umask": 0o22, "env": {}}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.connect(str(warm_socket(runtime)))
        with open(os.devnull, "rb") as null:
            socket.send_fds(sock, [json.dumps(header).encode()], [null.fileno()] * 3)
        sock.settimeout(30)
        assert sock.recv(16) == b""  # closed without "ready"
    assert _children_of(warm_pid) == []


def test_idle_warm_server_exits_and_removes_its_socket(runtime: Path, tmp_path: Path) -> None:
    env = _env(runtime, GRAYMATTER_MCP_WARM_IDLE="1")
    pid = warm_server_pid(runtime, env)
    sock = warm_socket(runtime)
    _wait_for(lambda: not alive(pid), "the idle warm server to exit")
    assert not sock.exists()


def test_fingerprint_follows_source_changes(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "mod.py"
    module.write_text("x = 1\n")
    before = code_fingerprint(tmp_path / "pkg")
    assert code_fingerprint(tmp_path / "pkg") == before
    module.write_text("x = 22\n")
    assert code_fingerprint(tmp_path / "pkg") != before
    (tmp_path / "pkg" / "notes.txt").write_text("ignored")
    assert code_fingerprint(tmp_path / "pkg") == code_fingerprint(tmp_path / "pkg")


def test_fingerprint_follows_the_text_encoding_the_interpreter_started_with(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    probe = (
        "import sys; from pathlib import Path; from graymatter.faces.mcp_server.warm_paths import "
        f"code_fingerprint; print(code_fingerprint(Path({str(tmp_path / 'pkg')!r})))"
    )
    keys = {
        encoding: subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
            env=server_env(**({"PYTHONIOENCODING": encoding} if encoding else {})),
        ).stdout.strip()
        for encoding in ("", "latin-1", "utf-8:replace")
    }  # fmt: skip
    assert len(set(keys.values())) == 3  # the encoding and its error handler each make a key of their own
    assert code_fingerprint(tmp_path / "pkg") == code_fingerprint(tmp_path / "pkg")
