"""Anthropic extended thinking from the CLI (`--thinking-budget`) and config (`thinking_budget`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.env import hermetic_env
from support.provider_stubs import ProviderStub
from support.tinyagent_cli import run_cli

SUBMIT = {
    "thinking": {"thinking": "plan", "signature": "sig"},
    "tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}],
}


def _run(tmp_path: Path, *extra: object, config: str | None = None) -> tuple[int, str, list]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    args: list[object] = ["-t", "x", "--provider", "anthropic", "-m", "claude-sonnet-4-5"]
    if config is not None:
        (tmp_path / "c.yaml").write_text(config, encoding="utf-8")
        args += ["--config", tmp_path / "c.yaml"]
    with ProviderStub([SUBMIT]) as stub:
        args += ["--base-url", stub.base_url("anthropic"), "--cwd", work, "-o", tmp_path / "r.json"]
        result = run_cli(
            [*args, *extra],
            cwd=tmp_path,
            env=hermetic_env(tmp_path, {"ANTHROPIC_API_KEY": "k-anthropic-test"}),
        )
        return result.returncode, result.stderr, list(stub.requests)


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_the_flag_enables_thinking_with_its_budget(tmp_path: Path, stream: str) -> None:
    code, stderr, requests = _run(tmp_path, "--thinking-budget", 2048, stream)
    assert code == 0, stderr
    assert requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert requests[0].body["max_tokens"] > 2048


def test_the_config_sets_it_and_the_flag_wins(tmp_path: Path) -> None:
    code, stderr, requests = _run(tmp_path, config="thinking_budget: 4096\n")
    assert code == 0, stderr
    assert requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    code, stderr, requests = _run(tmp_path, "--thinking-budget", 1024, config="thinking_budget: 4096\n")
    assert requests[0].body["thinking"]["budget_tokens"] == 1024


def test_without_a_budget_no_thinking_is_requested(tmp_path: Path) -> None:
    code, stderr, requests = _run(tmp_path)
    assert code == 0, stderr
    assert "thinking" not in requests[0].body


def test_a_budget_below_the_minimum_is_a_usage_error(tmp_path: Path) -> None:
    code, stderr, requests = _run(tmp_path, "--thinking-budget", 100)
    assert code == 2
    last = stderr.strip().splitlines()[-1]
    assert last == "tinyagent: error: the thinking budget must be at least 1024 tokens"
    assert requests == []
