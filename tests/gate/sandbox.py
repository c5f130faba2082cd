"""Run one client session inside a loopback-only network namespace, with the scripted model beside it.

Usage (as root): ``unshare -n -- python sandbox.py --script S.json --requests R.json --port P
[--timeout SEC] -- CLIENT_COMMAND...``. The script brings ``lo`` up (``ip link set lo up``), serves the
scripted model of :mod:`wire_models` on ``127.0.0.1:P`` (the namespace is fresh, so a fixed port is always
free and configs can name it in advance), runs the client with the inherited environment, stdin closed,
then writes every model request to R.json and ends whatever the session left running in the namespace.
Its exit status is the client's (124 on timeout). Nothing can leave the machine: the namespace has no other
interface.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gate.wire_models import ModelServer, ScriptedModel, Step


def _bring_loopback_up() -> None:
    ip = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin") or "ip"
    done = subprocess.run([ip, "link", "set", "lo", "up"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"sandbox: ip link set lo up failed: {done.stderr.strip()}")


def _run_client(command: list[str], stdout: Path, stderr: Path, timeout: float) -> int:
    with stdout.open("wb") as out, stderr.open("wb") as err:
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        try:
            return child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return 124
        finally:
            try:  # the client's MCP servers and helpers share its session: none outlives the run
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _end_namespace_processes() -> int:
    """SIGKILL every other process in this network namespace (daemons the client's servers left behind,
    e.g. graymatter's warm MCP server, which starts in its own session); return how many."""
    own = os.readlink("/proc/self/ns/net")
    ended = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.readlink(entry / "ns" / "net") == own:
                os.kill(int(entry.name), signal.SIGKILL)
                ended += 1
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True, type=Path)
    parser.add_argument("--requests", required=True, type=Path)
    parser.add_argument("--stdout", required=True, type=Path)
    parser.add_argument("--stderr", required=True, type=Path)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a client command is required after --")
    _bring_loopback_up()
    steps = [Step.from_json(item) for item in json.loads(args.script.read_text())]
    model = ScriptedModel(steps=steps)
    with ModelServer(model, args.port):
        code = _run_client(command, args.stdout, args.stderr, args.timeout)
    _end_namespace_processes()
    args.requests.write_text(json.dumps(model.requests))
    return code


if __name__ == "__main__":
    sys.exit(main())
