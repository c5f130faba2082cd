"""The effects gate (real bash, real pipes): a command started behind it runs only once the gate opens,
never when it is refused, and sees the same shell as without it (``$0``, line numbers, environment).
The toolbox waits for its `effects_gate` before any tool's first effect."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from tinyagent.tools.gate import GATE_CLOSED, CommandGate, gate_honoured
from tinyagent.tools.process import marked_environment
from tinyagent.tools.toolbox import NOT_DURABLE, Toolbox
from tinyagent.types import ToolCall

BASH = shutil.which("bash") or "bash"


def _start(command: str, gate: CommandGate, cwd: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [BASH, "-c", command],
        cwd=cwd,
        env=gate.environment(marked_environment("gate-test:1")),
        pass_fds=gate.inherited,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    gate.started()
    return proc


def test_this_bash_honours_the_gate() -> None:
    assert gate_honoured(BASH, marked_environment("gate-test:0"))


def test_a_refused_gate_runs_nothing(tmp_path: Path) -> None:
    gate = CommandGate()
    proc = _start("touch ran", gate, tmp_path)
    time.sleep(0.2)
    assert not (tmp_path / "ran").exists()  # waiting at the gate
    gate.refuse()
    output, _ = proc.communicate(timeout=30)
    assert (proc.returncode, output) == (GATE_CLOSED, b"")
    assert not (tmp_path / "ran").exists()


def test_an_open_gate_runs_the_same_shell_as_without_it(tmp_path: Path) -> None:
    gate = CommandGate()
    [fd] = gate.inherited
    script = (
        'echo "$0 $LINENO"; env | grep -c -e BASH_ENV -e TINYAGENT_GATE\n'
        f"test -e /proc/$$/fd/{fd} && echo gate-open || echo gate-closed\n"
        "bash -c 'echo nested'\n"
        "if )"
    )
    proc = _start(script, gate, tmp_path)
    gate.open()
    gated, _ = proc.communicate(timeout=30)
    plain = subprocess.run(
        [BASH, "-c", script],
        cwd=tmp_path,
        env=marked_environment("gate-test:1"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.returncode == plain.returncode == 2  # the syntax error on line 4
    assert gated == plain.stdout
    assert b"bash 1\n0\ngate-closed\nnested\n" in gated and b"line 4: syntax error" in gated


def test_the_toolbox_waits_for_the_reply_before_a_command_runs(tmp_path: Path) -> None:
    toolbox = Toolbox(tmp_path)
    seen: list[bool] = []

    def gate() -> bool:
        time.sleep(0.3)  # the command's bash is already started: it must still be waiting
        seen.append((tmp_path / "ran").exists())
        return True

    toolbox.effects_gate = gate
    result = toolbox.run(ToolCall(id="1", name="bash", arguments='{"command": "touch ran"}'))
    assert (result.content, result.is_error) == ("exit code: 0\n", False)
    assert seen == [False] and (tmp_path / "ran").exists()


def test_a_refused_batch_has_no_effect_but_submit_still_answers(tmp_path: Path) -> None:
    toolbox = Toolbox(tmp_path)
    calls = []
    toolbox.effects_gate = lambda: calls.append(1) is not None  # refused: False
    results = [
        toolbox.run(ToolCall(id="1", name="bash", arguments='{"command": "touch ran"}')),
        toolbox.run(ToolCall(id="2", name="write_file", arguments='{"path": "w.txt", "content": "x"}')),
        toolbox.run(ToolCall(id="3", name="read_file", arguments='{"path": "missing.txt"}')),
        toolbox.run(ToolCall(id="4", name="submit", arguments='{"answer": "done"}')),
    ]
    assert [r.content for r in results[:2]] == [NOT_DURABLE, NOT_DURABLE]
    assert results[2].is_error and results[2].content != NOT_DURABLE  # reading has no effect to hold back
    assert results[3].submission == "done"
    assert not (tmp_path / "ran").exists() and not (tmp_path / "w.txt").exists()
    assert len(calls) == 2


def test_a_user_bash_env_is_kept_and_the_command_waits_before_it_starts(tmp_path: Path) -> None:
    (tmp_path / "env.sh").write_text("USER_SETUP=yes\n")
    toolbox = Toolbox(tmp_path)
    opened = threading.Event()

    def gate() -> bool:
        opened.set()
        return True

    toolbox.effects_gate = gate
    previous = os.environ.get("BASH_ENV")
    os.environ["BASH_ENV"] = str(tmp_path / "env.sh")
    try:
        result = toolbox.run(ToolCall(id="1", name="bash", arguments='{"command": "echo $USER_SETUP"}'))
    finally:
        if previous is None:
            del os.environ["BASH_ENV"]
        else:
            os.environ["BASH_ENV"] = previous
    assert opened.is_set()
    assert result.content == "exit code: 0\nyes\n"
