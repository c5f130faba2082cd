"""A workspace for `tinyagent --resume` CLI tests: temp root, project, isolated env, the stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.provider_stubs import ProviderStub
from support.resume_checkpoints import SECRET, assert_refused, cli_env, executed_markers
from support.tinyagent_cli import run_cli

MODEL = "gpt-4.1-mini"
TASK = f"append markers to calls.log {SECRET}"


def usage(n: int = 100) -> dict[str, int]:
    return {"input": n, "output": 10, "cache_read": 5, "cache_write": 0}


class Workspace:
    """A temp root with a project directory, an isolated environment and a running stub."""

    def __init__(self, root: Path, stub: ProviderStub) -> None:
        self.root = root
        self.project = root / "project"
        self.project.mkdir()
        self.stub = stub
        self.env = cli_env(root)

    def run(self, *args: object, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
        return run_cli(args, env=env or self.env, cwd=self.root, timeout=timeout)

    def fresh(self, replies: list[dict[str, Any]], output: str = "run.json", *extra: object) -> Path:
        """A fresh run against the stub (non-streamed) ending at its step limit by default."""
        self.stub.add(*replies)
        result = self.run(
            "-t", TASK, "--provider", "openai", "-m", MODEL, "--base-url", self.stub.base_url("openai"),
            "--cwd", self.project, "--no-stream", "-o", output, *extra,
        )  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        path = self.root / output
        assert path.exists(), result.stderr
        return path

    def resume(self, source: Path | str, output: str = "continued.json", *extra: object, **kw: Any) -> Any:
        return self.run(
            "--resume", source, "--cwd", self.project, "--base-url", self.stub.base_url("openai"),
            "--no-stream", "-o", output, *extra, **kw,
        )  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


def rewrite(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


def scripted(ws: Workspace, name: str, replies: list[dict[str, Any]]) -> Path:
    script = ws.root / name
    script.write_text(json.dumps({"replies": replies, "record": str(ws.root / f"{name}.requests")}))
    return script


def scripted_requests(ws: Workspace, name: str) -> list[dict[str, Any]]:
    path = ws.root / f"{name}.requests"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def refused(ws: Workspace, result: Any, category: str, source: Path, source_bytes: bytes, output: str) -> str:
    line = assert_refused(result, category, source=source, source_bytes=source_bytes, output=ws.root / output)
    assert ws.stub.requests == []
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    return line
