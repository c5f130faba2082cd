"""The hook path (a fresh process on every prompt) loads no MCP SDK, HTTP stack, numpy or rich."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory

HEAVY = ("mcp", "numpy", "starlette", "uvicorn", "httpx", "anyio", "rich", "psycopg", "pydantic_settings")

PROBE = """
import io, json, sys
payload = json.dumps({"cwd": sys.argv[1], "session_id": "s", "prompt": sys.argv[3], "source": "startup"})
sys.stdin = io.TextIOWrapper(io.BytesIO(payload.encode()))
from graymatter.faces.cli.main import main
code = main(["hook", "claude-code", sys.argv[2]])
sys.stdout.flush()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[4])))
sys.stderr.write(json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


def test_the_hook_path_imports_nothing_heavy(project: Path) -> None:
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember("my-app", "the queue is RabbitMQ")
        memory.checkpoint_save("my-app", {"step": 1})
    for event, prompt in (("session-start", ""), ("user-prompt", "which queue?"), ("pre-compact", "")):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(project), event, prompt, json.dumps(HEAVY)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=project,
        )
        report = json.loads(done.stderr.strip().splitlines()[-1])
        assert report == {"code": 0, "heavy": []}, (event, report)
        if event != "pre-compact":
            assert "RabbitMQ" in done.stdout
