"""The stub as its own process (``python -m support.provider_stubs``), and the wrapper that starts it."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .replies import StubReply, base_url_for
from .server import ProviderStub

_TESTS_DIR = Path(__file__).resolve().parents[2]


def _stub_env() -> dict[str, str]:
    """This environment with the test tree importable, so ``-m support.provider_stubs`` resolves."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(_TESTS_DIR), *([path] if path else [])])}


class StubProcess:
    """The stub as a separate process (for benchmarks, or when the test process must stay idle).

    `with StubProcess(replies, workdir=tmp_path) as proc:` gives `proc.url`, `proc.base_url(provider)`
    and `proc.requests()` (the recorded requests, read back from the process's record file).
    """

    def __init__(
        self, replies: Iterable[StubReply], *, workdir: str | os.PathLike[str], loop: bool = False
    ) -> None:
        self._dir = os.fspath(workdir)
        self._replies = list(replies)
        self._loop = loop
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.record_path = os.path.join(self._dir, f"stub-requests-{id(self)}.jsonl")

    def base_url(self, provider: str) -> str:
        return base_url_for(self.url, provider)

    def __enter__(self) -> StubProcess:
        script = os.path.join(self._dir, f"stub-script-{id(self)}.json")
        with open(script, "w", encoding="utf-8") as fh:
            json.dump({"replies": self._replies, "loop": self._loop}, fh)
        cmd = [
            sys.executable,
            "-m",
            "support.provider_stubs",
            "--script",
            script,
            "--record",
            self.record_path,
        ]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=_stub_env())
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(timeout=10)
            raise RuntimeError("provider stub process failed to start")
        self.url = json.loads(line)["url"]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    def requests(self, expected: int = 0, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Recorded requests (each written once its answer is complete); wait for `expected` of them."""
        deadline = time.monotonic() + timeout
        while True:
            records: list[dict[str, Any]] = []
            if os.path.exists(self.record_path):
                with open(self.record_path, encoding="utf-8") as fh:
                    records = [json.loads(line) for line in fh if line.endswith("\n")]
            if len(records) >= expected or time.monotonic() > deadline:
                return records
            time.sleep(0.01)


def _load_script(path: str) -> tuple[list[StubReply], bool]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, list):
        return data, False
    return list(data.get("replies", [])), bool(data.get("loop", False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted fake model provider on 127.0.0.1.")
    parser.add_argument("--script", required=True, help="JSON file: a list of replies or {replies, loop}")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0 = any free port)")
    parser.add_argument("--record", help="append every request as a JSON line to this file")
    parser.add_argument("--no-validate", action="store_true", help="accept requests real providers reject")
    args = parser.parse_args(argv)
    replies, loop = _load_script(args.script)
    stub = ProviderStub(
        replies, loop=loop, validate=not args.no_validate, port=args.port, record_path=args.record
    )
    print(json.dumps({"url": stub.url}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        stub._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stub._server.server_close()
    return 0
