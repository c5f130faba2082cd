"""Fixtures for the graymatter tests: hermetic Memory instances, a CLI runner (real subprocesses), the
local embedding/summary provider server and the PostgreSQL fixtures (started only when a test asks)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from support.embedding_stub import EmbeddingProviderStub, EmbeddingServer
from support.env import hermetic_env
from support.pgserver import pg_cluster, pg_dsn  # noqa: F401  (pytest fixtures)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def gm_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def mem(gm_dir: Path) -> Iterator[Memory]:
    memory = Memory(gm_dir, config=MemoryConfig(), embedder=None, summariser=None)
    yield memory
    memory.close()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A keyword-only store whose consolidation runs in the writing call (no background thread)."""
    opened = Memory(
        tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None, summariser=None
    )
    yield opened
    opened.close()


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def factory(directory: Path | None = None, **kwargs: Any) -> Memory:
        kwargs.setdefault("config", MemoryConfig())
        kwargs.setdefault("embedder", None)
        kwargs.setdefault("summariser", None)
        memory = Memory(directory or tmp_path / "store", **kwargs)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


@pytest.fixture
def cli(gm_dir: Path) -> Callable[..., CliResult]:
    """Run ``python -m graymatter --dir <gm_dir> ARGS`` in a real subprocess, in-process (the warm server's
    path has its own tests: tests/graymatter/faces/cli/test_warm_commands.py)."""

    def run(
        *args: str,
        stdin: str | None = None,
        use_dir: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
    ) -> CliResult:
        command = [sys.executable, "-m", "graymatter"]
        if use_dir:
            command += ["--dir", str(gm_dir)]
        proc = subprocess.run(
            [*command, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or hermetic_env(GRAYMATTER_MCP_WARM="0"),
            cwd=cwd,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def provider_stub() -> Iterator[EmbeddingProviderStub]:
    """A real HTTP server on 127.0.0.1 speaking Ollama (/api/tags, /api/embed, /api/generate),
    OpenAI (/v1/embeddings, /v1/chat/completions) and Anthropic (/v1/messages)."""
    with EmbeddingServer() as state:
        yield state


def snapshot(directory: Path) -> dict[str, bytes]:
    """Bytes of every file under ``directory`` (for byte-identical checks)."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@pytest.fixture
def snapshot_dir() -> Callable[[Path], dict[str, bytes]]:
    return snapshot
