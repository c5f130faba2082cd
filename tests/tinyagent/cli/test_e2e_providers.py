"""Acceptance: `tinyagent -t "create hello.txt containing hi" --provider X` end to end against the local
provider stubs, for every provider, streamed and not, through the real CLI process."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.env import hermetic_env
from support.provider_stubs import ProviderStub
from support.request_bodies import tool_results
from support.tinyagent_cli import load_json, run_cli, start_cli

PROVIDERS = ["openai", "openrouter", "ollama", "anthropic", "codex"]
KEYS = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "ollama": None,
    "anthropic": "ANTHROPIC_API_KEY",
    "codex": "OPENAI_API_KEY",
}
MODELS = {
    "openai": "gpt-4.1-mini",
    "openrouter": "openai/gpt-4.1-mini",
    "ollama": "qwen2.5-coder:7b",
    "anthropic": "claude-sonnet-4-5",
    "codex": "gpt-5-codex",
}
TASK = "create hello.txt containing hi"


def _argv(provider: str, base_url: str, work: Path, out: Path, *extra: str) -> list[str]:
    """The command line of one run of TASK against ``base_url``."""
    return [
        "-t", TASK, "--provider", provider, "-m", MODELS[provider], "--base-url", base_url,
        "--cwd", str(work), "-o", str(out), *extra,
    ]  # fmt: skip


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_create_hello_txt_end_to_end(tmp_path: Path, provider: str, stream: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    replies = [
        {
            "text": "I will create the file.",
            "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}],
            "usage": {"input": 120, "output": 20, "cache_read": 30, "cache_write": 0, "cost": 0.0005},
        },
        {
            "tool_calls": [{"name": "submit", "arguments": {"answer": "Created hello.txt containing hi."}}],
            "usage": {"input": 40, "output": 10, "cache_read": 150, "cache_write": 0, "cost": 0.0003},
        },
    ]
    with ProviderStub(replies) as stub:
        env = hermetic_env(tmp_path, {KEYS[provider]: "test-key"} if KEYS[provider] else None)
        out = tmp_path / "run.json"
        result = run_cli(
            _argv(provider, stub.base_url(provider), work, out, "--stream" if stream else "--no-stream"),
            cwd=tmp_path,
            env=env,
        )
        requests = list(stub.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Created hello.txt containing hi.\n"
    assert (work / "hello.txt").read_text() == "hi\n"

    assert len(requests) == 2
    for request in requests:
        assert request.body.get("stream", False) is stream
        assert request.body["model"] == MODELS[provider]
    assert tool_results(provider, requests[0].body) == []
    assert tool_results(provider, requests[1].body) == ["wrote 3 bytes to hello.txt"]
    if KEYS[provider]:
        auth = requests[0].headers.get("x-api-key") or requests[0].headers.get("authorization", "")
        assert auth.endswith("test-key")
    assert "test-key" not in result.stderr

    trajectory = load_json(out)
    assert trajectory["exit_status"] == "Submitted"
    assert trajectory["provider"] == provider
    assert trajectory["totals"]["steps"] == 2
    assert trajectory["totals"]["output_tokens"] == 30
    assert trajectory["totals"]["cache_read_tokens"] == 180
    assert trajectory["resume"]["cwd"] == str(work.resolve())
    assert "test-key" not in json.dumps(trajectory)
    assert "finished: status Submitted" in result.stderr


def _start(tmp_path: Path, provider: str, base_url: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    out = tmp_path / "run.json"
    env = hermetic_env(tmp_path, {KEYS[provider]: "test-key"} if KEYS[provider] else None)
    proc = start_cli(_argv(provider, base_url, work, out, *extra), cwd=tmp_path, env=env)
    return proc, out


@pytest.mark.parametrize("provider", ["openai", "anthropic", "codex"])
def test_sigint_during_a_real_http_request_saves_interrupted(tmp_path: Path, provider: str) -> None:
    with ProviderStub([{"text": "slow", "delay": 60}]) as stub:
        proc, out = _start(tmp_path, provider, stub.base_url(provider))
        try:
            deadline = time.monotonic() + 20
            while not stub.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert stub.requests, "the request never reached the stub"
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    trajectory = load_json(out)
    assert trajectory["exit_status"] == "Interrupted"
    assert trajectory["totals"]["steps"] == 1
    assert [m["role"] for m in trajectory["messages"]] == ["system", "user"]


def test_time_limit_abandons_a_slow_http_request(tmp_path: Path) -> None:
    with ProviderStub([{"text": "slow", "delay": 60}]) as stub:
        proc, out = _start(tmp_path, "openai", stub.base_url("openai"), "--time-limit", "1")
        try:
            _, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 1
    assert "finished: status TimeLimit (time limit reached during a model request)" in stderr
    assert load_json(out)["exit_status"] == "TimeLimit"


WRITE_HELLO = {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}]}
SUBMIT = {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}


@pytest.mark.parametrize(
    ("provider", "faults"),
    [
        ("openai", [{"fault": "429", "retry_after": "0"}, {"fault": "500"}]),
        ("anthropic", [{"fault": "503", "retry_after": "0"}, {"fault": "drop"}]),
        ("codex", [{"fault": "drop"}, {"fault": "429", "retry_after": "0"}]),
    ],
)
def test_transient_faults_are_retried_and_the_run_still_succeeds(
    tmp_path: Path, provider: str, faults
) -> None:
    with ProviderStub([*faults, WRITE_HELLO, SUBMIT]) as stub:
        proc, out = _start(tmp_path, provider, stub.base_url(provider), "--no-stream")
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert stdout == "done\n"
    assert (tmp_path / "work" / "hello.txt").read_text() == "hi\n"
    trajectory = load_json(out)
    assert trajectory["totals"]["steps"] == 2  # retries are not steps


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        (
            {
                "fault": "status",
                "status": 401,
                "error": {"error": {"message": "invalid key", "type": "auth"}},
            },
            "ProviderAuthError",
        ),
        (
            {
                "fault": "status",
                "status": 404,
                "error": {"error": {"message": "The model does not exist", "code": "model_not_found"}},
            },
            "ProviderModelNotFound",
        ),
    ],
    ids=["401", "unknown-model"],
)
def test_auth_and_unknown_model_end_with_provider_error(tmp_path: Path, reply, detail: str) -> None:
    with ProviderStub([reply]) as stub:
        proc, out = _start(tmp_path, "openai", stub.base_url("openai"))
        stdout, stderr = proc.communicate(timeout=60)
        attempts = len(stub.requests)
    assert proc.returncode == 1
    assert stdout == ""
    assert attempts == 1  # never retried
    trajectory = load_json(out)
    assert trajectory["exit_status"] == "ProviderError"
    assert trajectory["exit_detail"].startswith(detail)
    assert "test-key" not in stderr
    assert "Traceback" not in stderr
