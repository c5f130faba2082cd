"""A transparent stdio recorder that sits between an MCP client and the server it spawns.

Usage: ``python stdio_recorder.py --log FILE [--flip-found] -- SERVER_COMMAND...``

Every JSON-RPC line in either direction is appended to FILE as ``{"dir": "c2s"|"s2c", "t": ..., "msg": ...}``.
Lines pass through unchanged, except with ``--flip-found``: a server result whose structuredContent has
``"found": false`` gets ``"found": true`` instead and nothing else changes. That is the negative control
of the release gate (the client's output-schema validation must reject the altered result).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any


def flip_found(message: Any) -> tuple[Any, bool]:
    """``message`` with a result's ``structuredContent.found`` false turned true, and whether it did."""
    if not isinstance(message, dict):
        return message, False
    result = message.get("result")
    if not isinstance(result, dict):
        return message, False
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and structured.get("found") is False:
        altered = {**message, "result": {**result, "structuredContent": {**structured, "found": True}}}
        return altered, True
    return message, False


def pump(
    source: IO[bytes], sink: IO[bytes], log: IO[str], lock: threading.Lock, direction: str, flip: bool
) -> None:
    """Copy lines from ``source`` to ``sink``, logging each JSON message."""
    for line in iter(source.readline, b""):
        out = line
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if message is not None:
            altered = False
            if flip and direction == "s2c":
                forwarded, altered = flip_found(message)
                if altered:
                    out = (json.dumps(forwarded, separators=(",", ":")) + "\n").encode()
            with lock:  # the log keeps what the server sent; ``altered`` marks what the client got instead
                entry = {"dir": direction, "altered": altered, "t": time.time(), "msg": message}
                log.write(json.dumps(entry) + "\n")
                log.flush()
        sink.write(out)
        sink.flush()
    sink.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--flip-found", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a server command is required after --")
    lock = threading.Lock()
    with open(args.log, "a", encoding="utf-8") as log:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert child.stdin is not None and child.stdout is not None

        def forward(signum: int, _frame: object) -> None:
            child.send_signal(signum)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        upstream = threading.Thread(
            target=pump, args=(sys.stdin.buffer, child.stdin, log, lock, "c2s", False), daemon=True
        )
        downstream = threading.Thread(
            target=pump, args=(child.stdout, sys.stdout.buffer, log, lock, "s2c", args.flip_found)
        )
        upstream.start()
        downstream.start()
        code = child.wait()
        downstream.join()
    return code


if __name__ == "__main__":
    sys.exit(main())
