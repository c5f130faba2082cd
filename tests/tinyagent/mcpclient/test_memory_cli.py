"""`tinyagent --memory` through the real CLI against the provider stubs and a real `graymatter mcp serve`.

The first run stores a fact with graymatter's memory_add tool and ends; tinyagent saves its checkpoint. The
second run on the same project finds both before its first request, in the instructions it sends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.env import hermetic_env
from support.processes import CLOSED_PORT_URL
from support.provider_stubs import ProviderStub
from support.tinyagent_cli import load_json, run_cli

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
FACT = "The build command of this project is make check."
ADD = {"name": "mcp__graymatter__memory_add", "arguments": {"agent_id": "tinyagent", "text": FACT}}
WRITE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "n\n"}}


def _submit(answer: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit", "arguments": {"answer": answer}}]}


def instructions(provider: str, body: dict[str, Any]) -> str:
    """The system prompt one request carries, per wire format."""
    if provider == "anthropic":
        system = body["system"]
        return system if isinstance(system, str) else "".join(block["text"] for block in system)
    if provider == "codex":
        return body["instructions"]
    return body["messages"][0]["content"]


def _run(
    tmp_path: Path, provider: str, replies: list[dict[str, Any]], task: str, out: str, *extra: str
) -> Any:
    work = tmp_path / "project"
    work.mkdir(exist_ok=True)
    env = hermetic_env(tmp_path, {KEYS[provider]: "key-0123456789", "GRAYMATTER_OLLAMA_URL": CLOSED_PORT_URL})
    with ProviderStub(replies) as stub:
        argv = ["-t", task, "--provider", provider, "-m", "m1", "--base-url", stub.base_url(provider)]
        result = run_cli(
            [*argv, "--cwd", work, "-o", tmp_path / out, "--memory", *extra], cwd=tmp_path, env=env
        )
        return result, list(stub.requests)


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "codex"])
def test_a_second_run_sees_the_first_runs_fact_and_checkpoint(
    tmp_path: Path, provider: str, stream: str
) -> None:
    first, requests = _run(
        tmp_path,
        provider,
        [{"tool_calls": [ADD, WRITE]}, _submit("stored it")],
        "learn the build",
        "r1.json",
        stream,
    )
    assert first.returncode == 0, first.stderr
    prompt = instructions(provider, requests[0].body)
    assert "## Memory from earlier runs (graymatter)" in prompt
    assert "Last checkpoint: none saved yet." in prompt and "No stored facts match the task." in prompt
    tools = json.dumps(requests[0].body["tools"])
    assert "mcp__graymatter__memory_add" in tools and "mcp__graymatter__checkpoint_save" in tools
    assert "memory: checkpoint saved to graymatter" in first.stderr
    stored = load_json(tmp_path / "r1.json")["messages"][3]
    assert stored["role"] == "tool" and not stored["is_error"], stored
    assert (tmp_path / "project" / ".graymatter").is_dir()  # graymatter's own routing: the project store

    second, requests = _run(tmp_path, provider, [_submit("done")], "run the build command", "r2.json", stream)
    assert second.returncode == 0, second.stderr
    prompt = instructions(provider, requests[0].body)
    assert f"- {FACT}" in prompt
    [line] = [line for line in prompt.splitlines() if line.startswith("Last checkpoint (")]
    state = json.loads(line.split("): ", 1)[1])
    assert state == {
        "files_touched": ["notes.txt"],
        "status": "Submitted",
        "steps": 2,
        "summary": "stored it",
        "task": "learn the build",
    }
    saved = load_json(tmp_path / "r2.json")
    assert saved["system_prompt"] == prompt
    assert saved["resume"]["memory_context"] is not None and prompt.endswith(
        saved["resume"]["memory_context"]
    )


def test_a_memory_run_that_stopped_resumes_with_its_recorded_instructions(tmp_path: Path) -> None:
    first, requests = _run(
        tmp_path, "openai", [{"tool_calls": [ADD]}], "learn", "r1.json", "--step-limit", "1"
    )
    assert first.returncode == 1, first.stderr
    prompt = instructions("openai", requests[0].body)
    env = hermetic_env(
        tmp_path, {"OPENAI_API_KEY": "key-0123456789", "GRAYMATTER_OLLAMA_URL": CLOSED_PORT_URL}
    )
    with ProviderStub([_submit("done")]) as stub:
        argv = ["--resume", tmp_path / "r1.json", "--cwd", tmp_path / "project", "-o", tmp_path / "r2.json"]
        argv += ["--base-url", stub.base_url("openai"), "--step-limit", "3"]
        refused = run_cli(argv, cwd=tmp_path, env=env)  # without --memory the memory tools are missing
        resumed = run_cli([*argv, "--memory"], cwd=tmp_path, env=env)
        body = stub.requests[-1].body
    assert refused.returncode == 2
    assert refused.stderr.startswith("tinyagent: cannot resume: mcp tools changed: ")
    assert resumed.returncode == 0, resumed.stderr
    assert instructions("openai", body) == prompt  # the recorded memory block, not a new one
    assert "memory: checkpoint saved to graymatter" in resumed.stderr
