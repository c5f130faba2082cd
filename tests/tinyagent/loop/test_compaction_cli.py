"""Compaction through the real CLI against the provider stubs: a run crosses its context window, compacts,
continues, is killed (SIGKILL while a tool blocks on a fifo), and resumes from the compacted state; the
request body is checked at each provider."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support.env import hermetic_env
from support.provider_stubs import ProviderStub
from support.tinyagent_cli import load_json, run_cli, tinyagent_cmd
from tinyagent.prompts import PENDING_CALL_RESULT, SUMMARY_HEADER
from tinyagent.resume.journal import load_with_journal

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
SUMMARY = "SUMMARY-ONE: echoed one, two and three."


def _bash(command: str, call_id: str, tokens: int) -> dict[str, Any]:
    return {
        "tool_calls": [{"id": call_id, "name": "bash", "arguments": {"command": command}}],
        "usage": {"input": tokens, "output": 10},
    }


def _markers(work: Path) -> list[str]:
    log = work / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def _release(fifo: Path) -> None:
    """Let an orphaned reader of `fifo` finish (nothing to do when no command opened it)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "codex"])
def test_a_compacted_run_is_killed_and_resumes_from_the_compacted_state(
    tmp_path: Path, provider: str, stream: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "gate.fifo"
    os.mkfifo(fifo)
    replies = [
        _bash("echo one | tee -a calls.log", "call_1", 100),
        _bash("echo two | tee -a calls.log", "call_2", 200),
        _bash("echo three | tee -a calls.log", "call_3", 900),  # the next prompt crosses 80 % of 1000
        {"text": SUMMARY, "usage": {"input": 300, "output": 20}},  # the summarising request
        _bash("echo started >> calls.log; cat ../gate.fifo", "call_4", 400),
    ]
    env = hermetic_env(tmp_path, {KEYS[provider]: "key-0123456789"})
    base = ["--provider", provider, "-m", "m1", "--context-window", "1000", stream]
    with ProviderStub(replies) as stub:
        argv = ["-t", "count", *base, "--base-url", stub.base_url(provider), "--cwd", work, "-o", "run.json"]
        proc = subprocess.Popen(tinyagent_cmd(*argv), cwd=tmp_path, env=env, stderr=subprocess.DEVNULL)
        try:
            for _ in range(3000):  # bounded wait until the blocking command runs
                if "started" in _markers(work) or proc.poll() is not None:
                    break
                time.sleep(0.01)
            assert _markers(work) == ["one", "two", "three", "started"]
        finally:
            proc.kill()
            proc.wait(timeout=30)
            _release(fifo)
        requests = [json.dumps(r.body) for r in stub.requests]
        summarising = stub.requests[3].body
    assert len(requests) == 5
    assert "tools" not in summarising and "echo one" in requests[3]  # the summariser reads the old turns
    assert "echo one" in requests[2] and SUMMARY not in requests[2]
    assert SUMMARY in requests[4] and "echo one" not in requests[4]  # the compacted view
    assert "echo two" in requests[4] and "echo three" in requests[4]  # the last two turns kept verbatim

    saved = json.loads(load_with_journal(tmp_path / "run.json").model_dump_json())  # the reply is journaled
    assert saved["resume"]["compaction"] == {"version": 1, "summary": SUMMARY, "through": 4, "count": 1}
    assert saved["resume"]["tool_batch_pending"] is True
    assert "echo one" in json.dumps(saved["messages"])  # the full history stays for audit
    totals = saved["totals"]
    assert (totals["steps"], totals["summary_requests"], totals["output_tokens"]) == (4, 1, 60)

    with ProviderStub([{"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}]) as stub:
        argv = ["--resume", "run.json", *base[4:], "--base-url", stub.base_url(provider), "--cwd", work]
        result = run_cli(
            [
                *argv,
                "-o",
                "continued.json",
                "--resume-pending",
                "mark-interrupted",
                "--context-window",
                "1000",
            ],
            cwd=tmp_path,
            env=env,
        )
        [body] = [json.dumps(r.body) for r in stub.requests]
    assert result.returncode == 0, result.stderr
    assert SUMMARY in body and SUMMARY_HEADER.replace('"', '\\"') in body
    assert "echo one" not in body and "echo three" in body and "call_4" in body
    assert json.dumps(PENDING_CALL_RESULT)[1:-1] in body
    continued = load_json(tmp_path / "continued.json")
    assert continued["resume"]["compaction"]["through"] == 4
    assert continued["exit_status"] == "Submitted"
    assert _markers(work) == ["one", "two", "three", "started"]  # nothing re-run
