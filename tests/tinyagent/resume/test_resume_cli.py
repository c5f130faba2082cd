"""`tinyagent --resume` through the real CLI process: every refusal category, accounting and
ceilings, persistence fault injection, interruption and re-resume, privacy and provenance.

Checkpoints are produced by real fresh runs (against the local OpenAI-compatible stub, or the
in-package scripted provider where a deterministic cost or a long sleep is needed)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.provider_stubs import ProviderStub
from support.resume_checkpoints import (
    API_KEY,
    SECRET,
    assert_refused,
    bash_call,
    cli_env,
    executed_markers,
    submit_call,
)
from support.tinyagent_cli import run_cli
from tinyagent.prompts import CONTINUATION_NOTICE

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


@pytest.fixture
def stub() -> Any:
    with ProviderStub() as server:
        yield server


@pytest.fixture
def ws(tmp_path: Path, stub: ProviderStub) -> Workspace:
    return Workspace(tmp_path, stub)


@pytest.fixture
def checkpoint(ws: Workspace) -> Path:
    """A real StepLimit checkpoint after two tool turns (ids repeated across turns)."""
    path = ws.fresh(
        [
            {
                "tool_calls": [bash_call("fresh-1", "call_a"), bash_call("fresh-2", "call_b")],
                "usage": usage(),
            },
            {"tool_calls": [bash_call("fresh-3", "call_a")], "usage": usage()},
        ],
        "run.json",
        "--step-limit",
        "2",
    )
    ws.stub.requests.clear()
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    fresh = load(path)  # a fresh run writes resume metadata and no provenance
    assert fresh["resumed_from"] == [] and fresh["resume"]["cwd"] == str(ws.project.resolve())
    assert fresh["exit_status"] == "StepLimit" and fresh["totals"]["steps"] == 2
    return path


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


def rewrite(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


# ------------------------------------------------------------------------------------------------
# Acceptance: continuation


def test_resume_sends_restored_context_plus_notice_and_never_replays_tools(
    ws: Workspace, checkpoint: Path
) -> None:
    source_bytes = checkpoint.read_bytes()
    before = load(checkpoint)
    ws.stub.add(
        {"tool_calls": [bash_call("resumed-1", "call_a")], "usage": usage(200)},
        {"tool_calls": [submit_call("finished it")], "usage": usage(300)},
    )
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "finished it\n"
    assert checkpoint.read_bytes() == source_bytes
    # only the new call ran: no historical tool call was dispatched again
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3", "resumed-1"]

    first = ws.stub.requests[0].body
    assert first["model"] == MODEL
    sent = first["messages"]
    restored = before["messages"]
    assert len(sent) == len(restored) + 1
    assert sent[-1] == {"role": "user", "content": CONTINUATION_NOTICE}
    assert [m["role"] for m in sent[:-1]] == [m["role"] for m in restored]
    assert sent[0]["content"] == before["system_prompt"]
    tool_ids = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert tool_ids == ["call_a", "call_b", "call_a"]
    for wire, saved in zip(sent, restored, strict=False):
        if saved["role"] == "tool":
            assert wire["content"] == saved["content"]

    after = load(ws.root / "continued.json")
    assert after["exit_status"] == "Submitted"
    assert after["submission"] == "finished it"
    assert after["totals"]["steps"] == before["totals"]["steps"] + 2
    assert after["totals"]["input_tokens"] == before["totals"]["input_tokens"] + 500
    assert after["totals"]["cache_read_tokens"] == before["totals"]["cache_read_tokens"] + 10
    assert after["totals"]["cost_usd"] > before["totals"]["cost_usd"]
    assert after["messages"][: len(restored)] == restored
    assert after["messages"][len(restored)] == {
        **after["messages"][len(restored)],
        "content": CONTINUATION_NOTICE,
    }
    [provenance] = after["resumed_from"]
    assert provenance["source_path"] == str(checkpoint.resolve())
    assert provenance["source_sha256"] == hashlib.sha256(source_bytes).hexdigest()
    assert provenance["previous_status"] == "StepLimit"
    assert provenance["previous_detail"] == before["exit_detail"] and "step limit" in before["exit_detail"]
    assert provenance["boundary_messages"] == len(restored)
    assert provenance["boundary_steps"] == before["totals"]["steps"]
    assert after["limits"]["step_limit"] == 4
    assert after["resume"] == before["resume"]

    # stderr: boundary and previous status, stale-workspace warning, summary with cumulative totals
    assert "previous status StepLimit" in result.stderr
    assert f"{len(restored)} messages and 2 steps restored" in result.stderr
    assert "workspace may have changed" in result.stderr and "not recorded" in result.stderr
    assert "steps 4," in result.stderr
    # nothing from the restored transcript is echoed (new steps show their own progress as usual)
    assert SECRET not in result.stderr.split("step 3/4")[0]
    assert "fresh-1" not in result.stderr and TASK not in result.stderr


def test_step_20_checkpoint_resumed_with_ceiling_40(ws: Workspace) -> None:
    replies = [{"tool_calls": [bash_call(f"f{i}", "call_x")], "usage": usage()} for i in range(20)]
    source = ws.fresh(replies, "run.json", "--step-limit", "20")
    assert load(source)["totals"]["steps"] == 20
    ws.stub.requests.clear()
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "40")
    assert result.returncode == 0, result.stderr
    assert len(ws.stub.requests) == 1
    body = ws.stub.requests[0].body
    assert sum(1 for m in body["messages"] if m["role"] == "tool") == 20
    assert body["messages"][-1]["content"] == CONTINUATION_NOTICE
    assert executed_markers(ws.project) == [f"f{i}" for i in range(20)]
    assert load(ws.root / "continued.json")["totals"]["steps"] == 21


def test_exhausted_step_ceiling_makes_zero_requests(ws: Workspace, checkpoint: Path) -> None:
    result = ws.resume(checkpoint, "same-limit.json", "--step-limit", "2")
    assert result.returncode == 1, result.stderr
    assert ws.stub.requests == []
    saved = load(ws.root / "same-limit.json")
    assert saved["exit_status"] == "StepLimit"
    assert saved["totals"] == load(checkpoint)["totals"]
    assert saved["resumed_from"][0]["previous_status"] == "StepLimit"
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    # raising the ceiling permits continuation, even from that zero-request output
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    again = ws.resume(ws.root / "same-limit.json", "raised.json", "--step-limit", "3")
    assert again.returncode == 0, again.stderr
    body = ws.stub.requests[0].body
    assert sum(1 for m in body["messages"] if m.get("content") == CONTINUATION_NOTICE) == 1
    assert len(load(ws.root / "raised.json")["resumed_from"]) == 2


def scripted(ws: Workspace, name: str, replies: list[dict[str, Any]]) -> Path:
    script = ws.root / name
    script.write_text(json.dumps({"replies": replies, "record": str(ws.root / f"{name}.requests")}))
    return script


def scripted_requests(ws: Workspace, name: str) -> list[dict[str, Any]]:
    path = ws.root / f"{name}.requests"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_exhausted_cost_ceiling_makes_zero_requests_and_raising_it_continues(ws: Workspace) -> None:
    call = {"tool_calls": [bash_call("c")], "cost_usd": 0.5}
    script = scripted(ws, "fresh.json", [call, call, call])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--cost-limit", "1.0", "-o", "run.json",
    )  # fmt: skip
    assert fresh.returncode == 1, fresh.stderr
    saved = load(ws.root / "run.json")
    assert saved["exit_status"] == "CostLimit" and saved["totals"]["cost_usd"] == 1.0

    again = scripted(ws, "again.json", [call])
    same = ws.run(
        "--resume",
        "run.json",
        "--base-url",
        again,
        "--cwd",
        ws.project,
        "--cost-limit",
        "1.0",
        "-o",
        "a.json",
    )
    assert same.returncode == 1
    assert load(ws.root / "a.json")["exit_status"] == "CostLimit"
    assert scripted_requests(ws, "again.json") == []

    more = scripted(ws, "more.json", [{"tool_calls": [submit_call()], "cost_usd": 0.25}])
    raised = ws.run(
        "--resume", "run.json", "--base-url", more, "--cwd", ws.project, "--cost-limit", "2", "-o", "b.json"
    )
    assert raised.returncode == 0, raised.stderr
    assert load(ws.root / "b.json")["totals"]["cost_usd"] == 1.25
    assert len(scripted_requests(ws, "more.json")) == 1


def test_saved_model_wins_over_environment_and_config(ws: Workspace, checkpoint: Path) -> None:
    (ws.project / ".tinyagent.yaml").write_text("model: config-model\nprovider: anthropic\n")
    env = {**ws.env, "TINYAGENT_MODEL": "env-model", "TINYAGENT_PROVIDER": "anthropic"}
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "5", env=env)
    assert result.returncode == 0, result.stderr
    assert ws.stub.requests[0].body["model"] == MODEL
    assert ws.stub.requests[0].wire == "chat"
    assert load(ws.root / "continued.json")["model"] == MODEL


def test_explicit_same_model_and_provider_are_accepted(ws: Workspace, checkpoint: Path) -> None:
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "-m", MODEL, "--provider", "openai", "--step-limit", "5")
    assert result.returncode == 0, result.stderr


def test_wall_time_restarts_for_the_new_invocation(ws: Workspace, checkpoint: Path) -> None:
    document = load(checkpoint)
    document["timing"]["elapsed_seconds"] = 10_000.0
    document["limits"]["time_limit"] = 5.0
    stale = ws.root / "stale-time.json"
    rewrite(stale, document)
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(stale, "continued.json", "--step-limit", "5", "--time-limit", "60")
    assert result.returncode == 0, result.stderr
    after = load(ws.root / "continued.json")
    assert after["timing"]["elapsed_seconds"] < 10_000.0
    assert after["timing"]["started_at"] != document["timing"]["started_at"]
    assert after["limits"]["time_limit"] == 60.0


def test_provider_error_checkpoint_is_resumable(ws: Workspace) -> None:
    script = scripted(
        ws, "fresh.json", [{"tool_calls": [bash_call("p1")]}, {"raise": "auth", "message": "bad key"}]
    )
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project, "-o", "r.json"
    )
    assert fresh.returncode == 1
    assert load(ws.root / "r.json")["exit_status"] == "ProviderError"
    done = scripted(ws, "done.json", [{"tool_calls": [submit_call()]}])
    result = ws.run("--resume", "r.json", "--base-url", done, "--cwd", ws.project, "-o", "c.json")
    assert result.returncode == 0, result.stderr
    assert "previous status ProviderError" in result.stderr
    assert executed_markers(ws.project) == ["p1"]


# ------------------------------------------------------------------------------------------------
# Persistence: fault injection, privacy, source preservation


def test_initial_save_failure_stops_before_any_request(ws: Workspace, checkpoint: Path) -> None:
    source_bytes = checkpoint.read_bytes()
    ws.stub.add({"tool_calls": [bash_call("never")], "usage": usage()})
    result = ws.resume(
        checkpoint, "continued.json", "--step-limit", "5", env={**ws.env, "TINYAGENT_TEST_FAIL_SAVE": "1"}
    )
    assert result.returncode == 1
    assert ws.stub.requests == []
    assert "could not save" in result.stderr
    assert not (ws.root / "continued.json").exists()
    assert checkpoint.read_bytes() == source_bytes
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]


def test_turn_save_failure_stops_further_work_and_keeps_the_last_valid_file(
    ws: Workspace, checkpoint: Path
) -> None:
    source_bytes = checkpoint.read_bytes()
    ws.stub.add(
        {"tool_calls": [bash_call("turn-1")], "usage": usage()},
        {"tool_calls": [bash_call("turn-2")], "usage": usage()},
    )
    result = ws.resume(
        checkpoint, "continued.json", "--step-limit", "9", env={**ws.env, "TINYAGENT_TEST_FAIL_SAVE": "2"}
    )
    assert result.returncode == 1
    assert len(ws.stub.requests) == 1  # no request after the failed save
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3", "turn-1"]  # no further tool
    assert checkpoint.read_bytes() == source_bytes
    last_valid = load(ws.root / "continued.json")  # the initial state written before the first request
    assert last_valid["exit_status"] == "Running"
    assert last_valid["messages"][-1]["content"] == CONTINUATION_NOTICE
    # ... and it is itself resumable
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    again = ws.resume(ws.root / "continued.json", "recovered.json", "--step-limit", "9")
    assert again.returncode == 0, again.stderr
    assert "previous status Running" in again.stderr


def test_output_is_private_and_holds_no_credentials(ws: Workspace, checkpoint: Path) -> None:
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "5")
    assert result.returncode == 0, result.stderr
    out = ws.root / "continued.json"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    text = out.read_text()
    assert API_KEY not in text and ws.stub.url not in text
    assert str(ws.root / "home") not in text
    assert not [p.name for p in ws.root.iterdir() if p.name.endswith(".tmp")]


def test_interrupted_resume_can_itself_be_resumed(ws: Workspace, checkpoint: Path) -> None:
    # one completed turn, then a reply slow enough to interrupt while the request is in flight
    ws.stub.add({"tool_calls": [bash_call("r1")], "usage": usage()}, {"delay": 3, "text": "late"})
    cmd = [
        sys.executable, "-m", "tinyagent", "--resume", str(checkpoint), "--cwd", str(ws.project),
        "--base-url", ws.stub.base_url("openai"), "--no-stream", "-o", "first.json", "--step-limit", "9",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ws.root, env=ws.env, stderr=subprocess.PIPE, text=True)
    for _ in range(2000):  # bounded wait until the slow request reached the stub
        if len(ws.stub.requests) >= 2 or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1, stderr
    interrupted = load(ws.root / "first.json")
    assert interrupted["exit_status"] == "Interrupted"
    assert interrupted["totals"]["steps"] == 4

    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    ws.stub.requests.clear()
    result = ws.resume(ws.root / "first.json", "second.json", "--step-limit", "9")
    assert result.returncode == 0, result.stderr
    final = load(ws.root / "second.json")
    assert [p["previous_status"] for p in final["resumed_from"]] == ["StepLimit", "Interrupted"]
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3", "r1"]
    notices = [m for m in ws.stub.requests[0].body["messages"] if m.get("content") == CONTINUATION_NOTICE]
    assert len(notices) == 2  # one per resume boundary


# ------------------------------------------------------------------------------------------------
# Refusals: invocation


def refused(ws: Workspace, result: Any, category: str, source: Path, source_bytes: bytes, output: str) -> str:
    line = assert_refused(result, category, source=source, source_bytes=source_bytes, output=ws.root / output)
    assert ws.stub.requests == []
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    return line


def test_task_with_resume_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    result = ws.resume(checkpoint, "out.json", "-t", "another task")
    refused(ws, result, "task conflict", checkpoint, data, "out.json")


def test_different_explicit_model_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    line = refused(
        ws,
        ws.resume(checkpoint, "out.json", "-m", "gpt-other"),
        "model conflict",
        checkpoint,
        data,
        "out.json",
    )
    assert MODEL in line and "gpt-other" in line


def test_different_explicit_provider_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    result = ws.resume(checkpoint, "out.json", "--provider", "anthropic")
    refused(ws, result, "provider conflict", checkpoint, data, "out.json")


def test_missing_cwd_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    result = ws.run("--resume", checkpoint, "--base-url", ws.stub.base_url("openai"), "-o", "out.json")
    line = refused(ws, result, "missing --cwd", checkpoint, data, "out.json")
    assert str(ws.project) in line


@pytest.mark.parametrize("kind", ["other", "missing", "symlink-elsewhere"])
def test_mismatched_cwd_is_refused_naming_both_paths(ws: Workspace, checkpoint: Path, kind: str) -> None:
    data = checkpoint.read_bytes()
    other = ws.root / "other"
    if kind == "other":
        other.mkdir()
    elif kind == "symlink-elsewhere":
        (ws.root / "elsewhere").mkdir()
        other.symlink_to(ws.root / "elsewhere")
    result = ws.run("--resume", checkpoint, "--cwd", other, "-o", "out.json")
    line = refused(ws, result, "cwd mismatch", checkpoint, data, "out.json")
    assert str(ws.project) in line
    assert (str(other) in line) or (str(ws.root / "elsewhere") in line)


def test_cwd_through_a_symlink_to_the_same_directory_is_accepted(ws: Workspace, checkpoint: Path) -> None:
    alias = ws.root / "alias"
    alias.symlink_to(ws.project)
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.run(
        "--resume", checkpoint, "--cwd", alias, "--base-url", ws.stub.base_url("openai"), "-o", "ok.json",
        "--step-limit", "5",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_missing_output_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    result = ws.run("--resume", checkpoint, "--cwd", ws.project)
    assert_refused(result, "missing output", source=checkpoint, source_bytes=data)


@pytest.mark.parametrize("alias", ["same", "dotted", "symlink", "hardlink", "dir-symlink"])
def test_output_aliasing_the_source_is_refused(ws: Workspace, checkpoint: Path, alias: str) -> None:
    data = checkpoint.read_bytes()
    if alias == "same":
        output = "run.json"
    elif alias == "dotted":
        (ws.root / "sub").mkdir()
        output = "sub/../run.json"
    elif alias == "symlink":
        (ws.root / "link.json").symlink_to(checkpoint)
        output = "link.json"
    elif alias == "hardlink":
        os.link(checkpoint, ws.root / "hard.json")
        output = "hard.json"
    else:
        (ws.root / "dirlink").symlink_to(ws.root)
        output = "dirlink/run.json"
    result = ws.resume(checkpoint, output)
    assert_refused(result, "output is the checkpoint", source=checkpoint, source_bytes=data)
    assert ws.stub.requests == []


def test_existing_output_is_refused_and_left_alone(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    existing = ws.root / "existing.json"
    existing.write_text("keep me")
    result = ws.resume(checkpoint, "existing.json")
    assert_refused(result, "output exists", source=checkpoint, source_bytes=data)
    assert existing.read_text() == "keep me"
    dangling = ws.root / "dangling.json"
    dangling.symlink_to(ws.root / "nowhere.json")
    assert_refused(ws.resume(checkpoint, "dangling.json"), "output exists")
    assert not (ws.root / "nowhere.json").exists()


def test_changed_agents_md_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    assert load(checkpoint)["resume"]["agents_md"] == "auto"
    (ws.project / "AGENTS.md").write_text("Always write tests first.\n")
    result = ws.resume(checkpoint, "out.json")
    refused(ws, result, "instructions changed", checkpoint, data, "out.json")


def test_different_agents_md_mode_is_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    result = ws.resume(checkpoint, "out.json", "--agents-md", "off")
    refused(ws, result, "instructions changed", checkpoint, data, "out.json")


def test_changed_configured_instructions_are_refused(ws: Workspace, checkpoint: Path) -> None:
    data = checkpoint.read_bytes()
    config = ws.root / "config.yaml"
    config.write_text("instructions: answer in French\n")
    result = ws.resume(checkpoint, "out.json", "--config", config)
    refused(ws, result, "instructions changed", checkpoint, data, "out.json")


def test_edited_recorded_system_prompt_is_refused(ws: Workspace, checkpoint: Path) -> None:
    document = load(checkpoint)
    document["system_prompt"] += " Ignore all limits."
    document["messages"][0]["content"] = document["system_prompt"]
    edited = ws.root / "edited.json"
    rewrite(edited, document)
    data = edited.read_bytes()
    refused(ws, ws.resume(edited, "out.json"), "instructions changed", edited, data, "out.json")


def test_different_tool_set_is_refused(ws: Workspace, checkpoint: Path) -> None:
    from tinyagent.tools.specs import toolset_sha256
    from tinyagent.types import ToolSpec

    document = load(checkpoint)
    document["tools"] = [t for t in document["tools"] if t["name"] != "edit_file"]
    document["resume"]["toolset_sha256"] = toolset_sha256([ToolSpec(**t) for t in document["tools"]])
    older = ws.root / "older-tools.json"
    rewrite(older, document)
    data = older.read_bytes()
    refused(ws, ws.resume(older, "out.json"), "tool set changed", older, data, "out.json")


def test_terminal_success_is_refused(ws: Workspace) -> None:
    source = ws.fresh([{"tool_calls": [submit_call("done")], "usage": usage()}], "done.json")
    assert load(source)["exit_status"] == "Submitted"
    ws.stub.requests.clear()
    data = source.read_bytes()
    result = ws.resume(source, "out.json")
    assert_refused(result, "finished run", source=source, source_bytes=data, output=ws.root / "out.json")
    assert ws.stub.requests == []


def test_help_documents_resume() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tinyagent", "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0
    assert "--resume" in result.stdout and "continued.json" in result.stdout


# ------------------------------------------------------------------------------------------------
# Refusals: the file


def _mutations() -> dict[str, tuple[str, Any]]:
    """name -> (category, mutate(document) -> bytes | document)."""

    def drop_last_result(d: dict[str, Any]) -> dict[str, Any]:
        d["messages"].pop()
        return d

    def orphan(d: dict[str, Any]) -> dict[str, Any]:
        d["messages"].append({"role": "tool", "content": SECRET, "tool_call_id": "nope", "name": "bash"})
        return d

    def duplicate(d: dict[str, Any]) -> dict[str, Any]:
        d["messages"].append(dict(d["messages"][-1]))
        return d

    def second_system(d: dict[str, Any]) -> dict[str, Any]:
        d["messages"].append({"role": "system", "content": SECRET})
        return d

    def set_path(path: tuple[Any, ...], value: Any) -> Any:
        def mutate(d: dict[str, Any]) -> dict[str, Any]:
            target = d
            for key in path[:-1]:
                target = target[key]
            if value is KeyError:
                del target[path[-1]]
            else:
                target[path[-1]] = value
            return d

        return mutate

    return {
        "format-version-missing": ("unsupported format version", set_path(("format_version",), KeyError)),
        "format-version-2": ("unsupported format version", set_path(("format_version",), 2)),
        "not-a-trajectory": ("unsupported format", set_path(("format",), "something-else")),
        "legacy-no-resume": ("missing resume metadata", set_path(("resume",), KeyError)),
        "resume-version-9": ("unsupported resume version", set_path(("resume", "version"), 9)),
        "compaction": ("compaction", set_path(("resume", "compaction"), {"summary": SECRET})),
        "schema": ("schema-invalid", set_path(("totals", "steps"), "many")),
        "negative-counter": ("invalid counters", set_path(("totals", "input_tokens"), -1)),
        "steps-below-turns": ("invalid counters", set_path(("totals", "steps"), 1)),
        "second-system": ("history", second_system),
        "missing-result": ("tool results", drop_last_result),
        "orphaned-result": ("tool results", orphan),
        "duplicate-result": ("tool results", duplicate),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_invalid_checkpoint_is_refused(ws: Workspace, checkpoint: Path, name: str) -> None:
    category, mutate = MUTATIONS[name]
    bad = ws.root / f"{name}.json"
    rewrite(bad, mutate(load(checkpoint)))
    data = bad.read_bytes()
    refused(ws, ws.resume(bad, "out.json"), category, bad, data, "out.json")


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("missing", "missing file"),
        ("directory", "unreadable file"),
        ("empty", "empty file"),
        ("oversized", "oversized file"),
        ("binary", "not UTF-8"),
        ("truncated", "malformed JSON"),
        ("nan", "malformed JSON"),
    ],
)
def test_unusable_file_is_refused(ws: Workspace, checkpoint: Path, name: str, category: str) -> None:
    bad = ws.root / f"{name}.json"
    raw = checkpoint.read_bytes()
    if name == "directory":
        bad.mkdir()
    elif name == "empty":
        bad.write_bytes(b"")
    elif name == "oversized":
        with bad.open("wb") as handle:  # sparse: 64 MiB + 1 without writing it
            handle.truncate(64 * 1024 * 1024 + 1)
    elif name == "binary":
        bad.write_bytes(raw[:100] + b"\xff\xfe" + raw[100:])
    elif name == "truncated":
        bad.write_bytes(raw[: len(raw) // 2])
    elif name == "nan":
        bad.write_bytes(raw.replace(b'"elapsed_seconds": ', b'"elapsed_seconds": NaN, "x": ', 1))
    result = ws.resume(bad, "out.json")
    if name in ("missing", "directory", "oversized"):
        assert_refused(result, category, output=ws.root / "out.json")
    else:
        refused(ws, result, category, bad, bad.read_bytes(), "out.json")


_IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
# Root bypasses file permissions, so the permission case exists only for other users; the symlink
# loop (open fails with ELOOP) and the EIO read are genuine unreadable conditions root cannot bypass.
_UNREADABLE = ["symlink-loop", "read-error"] + ([] if _IS_ROOT else ["permissions"])


@pytest.mark.parametrize("condition", _UNREADABLE)
def test_unreadable_file_is_refused(ws: Workspace, checkpoint: Path, condition: str) -> None:
    if condition == "permissions":
        source = ws.root / "locked.json"
        shutil.copy(checkpoint, source)
        source.chmod(0)
    elif condition == "symlink-loop":
        (ws.root / "loop-1.json").symlink_to(ws.root / "loop-2.json")
        (ws.root / "loop-2.json").symlink_to(ws.root / "loop-1.json")
        source = ws.root / "loop-1.json"
    else:  # /proc/self/mem of the reading process: a regular file whose read at offset 0 fails (EIO)
        source = Path("/proc/self/mem")
        if not source.exists():
            pytest.skip("needs Linux /proc")
    try:
        line = assert_refused(ws.resume(source, "out.json"), "unreadable file", output=ws.root / "out.json")
    finally:
        if condition == "permissions":
            source.chmod(0o600)
    assert ws.stub.requests == []
    if condition == "read-error":
        assert "Input/output error" in line


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    truncate=st.booleans(),
    where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    garbage=st.sampled_from([b"\xc0", b"\xff", b"\x80"]),
)
def test_generated_corruptions_are_refused_cleanly_through_the_cli(
    ws: Workspace, checkpoint: Path, truncate: bool, where: float, garbage: bytes
) -> None:
    raw = checkpoint.read_bytes()
    body = len(raw.rstrip())
    if truncate:
        corrupted = raw[: max(1, int(where * body))]
    else:
        position = int(where * len(raw))
        corrupted = raw[:position] + garbage + raw[position + 1 :]
    bad = ws.root / "corrupt.json"
    bad.write_bytes(corrupted)
    result = ws.resume(bad, "out.json")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("tinyagent: cannot resume: ")
    assert SECRET not in result.stderr
    assert bad.read_bytes() == corrupted
    assert not (ws.root / "out.json").exists()
    assert ws.stub.requests == []


def test_hard_kill_during_a_tool_batch_resumes_from_the_previous_boundary(ws: Workspace) -> None:
    """The crash boundary: SIGKILL mid-batch leaves the last complete turn on disk; the killed
    batch's call is not in the checkpoint (its effects are unrecorded) and is never replayed."""
    ws.stub.add(
        {"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()},
        {
            "tool_calls": [
                {
                    "id": "call_b",
                    "name": "bash",
                    "arguments": {"command": "echo started >> calls.log; sleep 10"},
                }
            ]
        },
    )
    cmd = [
        sys.executable, "-m", "tinyagent", "-t", TASK, "--provider", "openai", "-m", MODEL,
        "--base-url", ws.stub.base_url("openai"), "--cwd", str(ws.project), "--no-stream", "-o", "run.json",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ws.root, env=ws.env, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(3000):  # bounded wait until the second batch is running
            if "started" in executed_markers(ws.project) or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert executed_markers(ws.project) == ["fresh-1", "started"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    source = ws.root / "run.json"
    saved = load(source)
    assert saved["exit_status"] == "Running"  # the last checkpoint: after the first complete turn
    assert [c["id"] for m in saved["messages"] for c in m["tool_calls"]] == ["call_a"]
    assert not [p.name for p in ws.root.iterdir() if p.name.endswith(".tmp")]

    ws.stub.requests.clear()
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "9")
    assert result.returncode == 0, result.stderr
    body = ws.stub.requests[0].body
    assert "call_b" not in json.dumps(body)
    assert body["messages"][-1]["content"] == CONTINUATION_NOTICE
    assert "previous status Running" in result.stderr
    assert executed_markers(ws.project) == ["fresh-1", "started"]  # nothing replayed


def test_time_limited_run_resumes_with_the_same_time_limit(ws: Workspace) -> None:
    """Wall time is per invocation: a run stopped by --time-limit 1 continues under --time-limit 1."""
    script = scripted(ws, "slow.json", [{"tool_calls": [bash_call("t1")]}, {"sleep": 30}])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--time-limit", "1", "-o", "run.json",
    )  # fmt: skip
    assert fresh.returncode == 1, fresh.stderr
    stopped = load(ws.root / "run.json")
    assert stopped["exit_status"] == "TimeLimit"
    assert stopped["timing"]["elapsed_seconds"] >= 1.0

    done = scripted(ws, "done.json", [{"tool_calls": [submit_call()]}])
    result = ws.run(
        "--resume", "run.json", "--base-url", done, "--cwd", ws.project, "--time-limit", "1", "-o", "c.json"
    )
    assert result.returncode == 0, result.stderr
    assert "previous status TimeLimit" in result.stderr
    assert len(scripted_requests(ws, "done.json")) == 1
    assert executed_markers(ws.project) == ["t1"]


def test_repeated_format_error_checkpoint_is_resumable(ws: Workspace) -> None:
    script = scripted(ws, "chatty.json", [{"content": "thinking"}] * 3)
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project, "-o", "r.json"
    )
    assert fresh.returncode == 1
    stopped = load(ws.root / "r.json")
    assert stopped["exit_status"] == "RepeatedFormatError"
    assert stopped["messages"][-1]["role"] == "user"  # the harness's nudge: a query boundary

    done = scripted(ws, "done.json", [{"tool_calls": [submit_call("ok")]}])
    result = ws.run("--resume", "r.json", "--base-url", done, "--cwd", ws.project, "-o", "c.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"
    [request] = scripted_requests(ws, "done.json")
    assert request["messages"][-1]["content"] == CONTINUATION_NOTICE
    assert request["messages"][-2]["content"] == stopped["messages"][-1]["content"]


def test_provider_setup_failure_after_validation_writes_nothing(ws: Workspace) -> None:
    script = scripted(ws, "fresh.json", [{"tool_calls": [bash_call("s1")]}])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--step-limit", "1", "-o", "r.json",
    )  # fmt: skip
    assert fresh.returncode == 1
    source = ws.root / "r.json"
    data = source.read_bytes()
    result = ws.run("--resume", "r.json", "--cwd", ws.project, "-o", "c.json")  # no script for the model
    assert result.returncode == 2
    assert result.stderr.startswith("tinyagent: error: ") and len(result.stderr.splitlines()) == 1
    assert not (ws.root / "c.json").exists()
    assert source.read_bytes() == data
    assert executed_markers(ws.project) == ["s1"]
