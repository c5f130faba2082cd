"""The effects gate: a bash command starts while its reply is made durable, and runs once it is.

A reply's pending journal record is `fdatasync`ed before any of its tool calls has an effect (ADR 0017).
Instead of waiting for the sync and then starting bash, the toolbox starts bash at once with
``BASH_ENV`` naming ``gate.sh``: bash sources it before the command's first line, and it blocks reading a
pipe only tinyagent holds. When the sync returned, tinyagent writes one line (the command runs); when
it failed and the run must stop, or tinyagent died, the pipe ends without one and bash exits 125
without running anything. The command itself is the same ``bash -c`` string (same ``$0``, line numbers
and error messages); the script unsets what it used, so nested shells never see the gate.

A gate is used only when it can be trusted: the user's environment sets no ``BASH_ENV`` of its own, and
a one-time probe showed that this ``bash`` honours it (a closed gate exits 125). Otherwise the toolbox
waits for the sync before starting the command, as before.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["GATE_CLOSED", "GATE_SCRIPT", "CommandGate", "gate_honoured"]

GATE_SCRIPT = Path(__file__).with_name("gate.sh")
GATE_CLOSED = 125
"""bash's exit status when the gate ended without a go: the command never ran."""
_FD_VAR = b"TINYAGENT_GATE_FD"


class CommandGate:
    """The gate of one command: a pipe whose read end the command's bash inherits."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def environment(self, env: dict[Any, Any]) -> dict[Any, Any]:
        """``env`` (bytes or str keys, as the toolbox builds it) with the gate's two variables."""
        script, fd = os.fsencode(GATE_SCRIPT), str(self._read).encode()
        if env and isinstance(next(iter(env)), str):
            return {**env, "BASH_ENV": os.fsdecode(script), _FD_VAR.decode(): fd.decode()}
        return {**env, b"BASH_ENV": script, _FD_VAR: fd}

    @property
    def inherited(self) -> tuple[int, ...]:
        """The descriptors the command's process keeps (``pass_fds``)."""
        return (self._read,)

    def started(self) -> None:
        """The command's process exists: this process lets go of the read end."""
        os.close(self._read)

    def open(self) -> None:
        """Let the command run (a command that already ended, e.g. on a syntax error, is fine)."""
        try:
            os.write(self._write, b"\n")
        except BrokenPipeError:
            pass
        finally:
            os.close(self._write)

    def refuse(self) -> None:
        """End the gate without a go: the command exits 125 without running."""
        os.close(self._write)

    def abandon(self) -> None:
        """Close both ends (the command could not be started)."""
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass


def gate_honoured(bash: str, env: dict[Any, Any]) -> bool:
    """True when ``bash`` sources the gate: a command behind a refused gate exits 125 without running."""
    gate = CommandGate()
    try:
        proc = subprocess.Popen(
            [bash, "-c", "exit 0"],
            env=gate.environment(env),
            pass_fds=gate.inherited,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        gate.abandon()
        return False
    gate.started()
    gate.refuse()
    try:
        return proc.wait(timeout=10) == GATE_CLOSED
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
