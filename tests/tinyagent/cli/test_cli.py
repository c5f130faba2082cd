"""The real `tinyagent` CLI process: usage errors, output streams, exit codes, every ending with a valid
trajectory, save failures, private default output and lazy imports (signals: test_cli_signals.py)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import tinyagent
from support.env import hermetic_env
from support.tinyagent_cli import call, load_json, reply, run_cli, scripted_argv, write_script
from tinyagent.trajectory.files import load_trajectory

SUBMIT = reply(call("submit", answer="all done"))
BUSY = reply(call("bash", command="true"), cost_usd=0.4)


def scripted(tmp_path: Path, work: Path, replies: list, *extra: str, env: dict | None = None, **kw):
    script = write_script(tmp_path / "script.json", replies)
    out = tmp_path / "run.json"
    result = run_cli(
        scripted_argv(script, work, out, *extra, task="the task"),
        cwd=tmp_path,
        env=hermetic_env(tmp_path, env),
        **kw,
    )
    return result, out


def test_version_and_help(tmp_path: Path) -> None:
    version = run_cli(["--version"], cwd=tmp_path, env=hermetic_env(tmp_path))
    assert (version.returncode, version.stdout) == (0, f"tinyagent {tinyagent.__version__}\n")
    helped = run_cli(["--help"], cwd=tmp_path, env=hermetic_env(tmp_path))
    assert helped.returncode == 0
    for needle in (
        "examples:",
        "--provider openai",
        "--provider anthropic",
        "--provider ollama",
        "--provider openrouter",
        "--provider codex",
        "exit codes:",
        "--resume",
    ):
        assert needle in helped.stdout


def test_help_does_not_import_heavy_modules(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tinyagent", "--help"],
        capture_output=True,
        text=True,
        env=hermetic_env(tmp_path),
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    for heavy in ("pydantic", "httpx", "yaml", "tinyagent.providers", "tinyagent.loop.agent", "numpy"):
        assert heavy not in imported


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "tinyagent: error: a task is required: pass -t TASK (or --resume FILE to continue a run)"),
        (["-t", "   "], "tinyagent: error: a task is required"),
        (["-t", "x", "--cwd", "/nonexistent/dir"], "tinyagent: error: working directory does not exist"),
        (["-t", "x", "--step-limit", "-3"], "tinyagent: error: --step-limit must be a finite number >= 0"),
        (["-t", "x", "--provider", "openai"], "tinyagent: error: openai: no API key; set OPENAI_API_KEY"),
        (["-t", "x", "--provider", "scripted"], "tinyagent: error: --provider scripted needs a script"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, argv: list[str], message: str) -> None:
    result = run_cli(argv, cwd=tmp_path, env=hermetic_env(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_unknown_flag_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(["-t", "x", "--frobnicate"], cwd=tmp_path, env=hermetic_env(tmp_path))
    assert result.returncode == 2
    assert "unrecognized arguments: --frobnicate" in result.stderr


def test_invalid_project_config_is_a_usage_error(tmp_path: Path, work: Path) -> None:
    (work / ".tinyagent.yaml").write_text("step_limit: lots\n")
    result, out = scripted(tmp_path, work, [SUBMIT])
    assert result.returncode == 2
    assert "config file" in result.stderr and "step_limit" in result.stderr
    assert not out.exists()


def test_stdout_carries_only_the_answer_and_stderr_the_progress(tmp_path: Path, work: Path) -> None:
    result, out = scripted(
        tmp_path, work, [reply(call("write_file", path="hello.txt", content="hi\n")), SUBMIT]
    )
    assert result.returncode == 0
    assert result.stdout == "all done\n"
    lines = result.stderr.splitlines()
    assert all(line.startswith("tinyagent: ") for line in lines)
    assert "\x1b" not in result.stderr  # plain text, no colour codes
    assert "tinyagent: step 1: write_file: hello.txt" in lines
    assert "tinyagent: finished: status Submitted" in lines
    assert any(line.startswith("tinyagent: steps 2, elapsed ") for line in lines)
    assert f"tinyagent: trajectory saved: {out}" in lines
    assert load_trajectory(out).exit_status.value == "Submitted"


def test_quiet_hides_progress_but_keeps_the_summary(tmp_path: Path, work: Path) -> None:
    result, _ = scripted(tmp_path, work, [BUSY, SUBMIT], "--quiet")
    assert result.returncode == 0
    assert "step 1" not in result.stderr
    assert "finished: status Submitted" in result.stderr
    assert "cost $0.4000" in result.stderr


def test_task_from_stdin(tmp_path: Path, work: Path) -> None:
    script = write_script(tmp_path / "s.json", [SUBMIT])
    out = tmp_path / "run.json"
    result = run_cli(
        ["-t", "-", "--provider", "scripted", "--base-url", str(script), "--cwd", str(work), "-o", str(out)],
        cwd=tmp_path,
        env=hermetic_env(tmp_path),
        stdin="task from stdin\n",
    )
    assert result.returncode == 0
    assert load_json(out)["task"] == "task from stdin\n"


@pytest.mark.parametrize(
    ("replies", "extra", "status", "detail"),
    [
        ([BUSY] * 5, ["--step-limit", "2"], "StepLimit", "step limit 2 reached (2 steps)"),
        ([BUSY] * 5, ["--cost-limit", "1"], "CostLimit", "cost limit $1 reached ($1.2000 spent)"),
        (
            [{"sleep": 30, **BUSY}],
            ["--time-limit", "0.5"],
            "TimeLimit",
            "time limit reached during a model request",
        ),
        (
            [BUSY, {"raise": "auth", "message": "openai: credentials rejected (HTTP 401)"}],
            [],
            "ProviderError",
            "ProviderAuthError: openai: credentials rejected (HTTP 401)",
        ),
        ([reply(call("bash", command='rm -rf "$PWD"')), BUSY], [], "ToolError", None),
        ([{"content": "done?"}] * 3, [], "RepeatedFormatError", "3 consecutive replies without a tool call"),
    ],
    ids=["step", "cost", "time", "provider", "tool", "format"],
)
def test_every_failure_ending_exits_1_with_a_valid_trajectory(
    tmp_path: Path, work: Path, replies: list, extra: list[str], status: str, detail: str | None
) -> None:
    result, out = scripted(tmp_path, work, replies, *extra)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"finished: status {status}" in result.stderr
    trajectory = load_trajectory(out)
    assert trajectory.exit_status.value == status
    if detail is not None:
        assert trajectory.exit_detail == detail
    assert trajectory.timing.ended_at is not None
    assert trajectory.resume is not None
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_real_save_failure_is_reported_and_exits_nonzero(tmp_path: Path, work: Path) -> None:
    out_dir = tmp_path / "out"
    script = write_script(
        tmp_path / "s.json",
        [reply(call("bash", command=f"rm -rf {out_dir} && touch {out_dir}")), SUBMIT],
    )
    result = run_cli(
        scripted_argv(script, work, out_dir / "run.json"),
        cwd=tmp_path,
        env=hermetic_env(tmp_path),
    )
    assert result.returncode == 1
    assert result.stdout == "all done\n"  # the answer is still delivered
    assert "tinyagent: error: could not save the trajectory: cannot prepare" in result.stderr
    assert "trajectory NOT fully saved" in result.stderr


def test_injected_save_failures_exit_nonzero(tmp_path: Path, work: Path) -> None:
    result, out = scripted(tmp_path, work, [BUSY, SUBMIT], env={"TINYAGENT_TEST_FAIL_SAVE": "2"})
    assert result.returncode == 1
    # the saves from the 2nd on fail: before the tool batch (pending), after it, and the final one
    assert result.stderr.count("could not save the trajectory: injected save failure") == 3
    assert load_trajectory(out).exit_status.value == "Running"  # the initial save is intact


def test_output_through_a_symlink_or_into_a_directory_is_refused(tmp_path: Path, work: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    script = write_script(tmp_path / "s.json", [SUBMIT])
    base = ["-t", "t", "--provider", "scripted", "--base-url", str(script), "--cwd", str(work)]
    result = run_cli([*base, "-o", str(link)], cwd=tmp_path, env=hermetic_env(tmp_path))
    assert result.returncode == 2
    assert "refusing to write the trajectory through a symlink" in result.stderr
    assert victim.read_text() == "keep"
    result = run_cli([*base, "-o", str(tmp_path)], cwd=tmp_path, env=hermetic_env(tmp_path))
    assert result.returncode == 2
    assert "output path is a directory" in result.stderr


def test_default_output_is_private_under_xdg_state_home(tmp_path: Path, work: Path) -> None:
    script = write_script(tmp_path / "s.json", [SUBMIT])
    env = hermetic_env(tmp_path)
    result = run_cli(
        ["-t", "t", "--provider", "scripted", "--base-url", str(script), "--cwd", str(work)],
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0
    runs = Path(env["XDG_STATE_HOME"]) / "tinyagent" / "runs"
    files = list(runs.iterdir())
    assert len(files) == 1
    assert re.fullmatch(r"run-\d{8}T\d{6}Z-\d+\.json", files[0].name)
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(runs.stat().st_mode) == 0o700
    assert f"trajectory saved: {files[0]}" in result.stderr


def test_scripted_provider_via_environment_and_agents_md_once(tmp_path: Path, work: Path) -> None:
    (work / "AGENTS.md").write_text("Use tabs.\n")
    script = write_script(tmp_path / "s.json", [SUBMIT], record=str(tmp_path / "requests.jsonl"))
    out = tmp_path / "run.json"
    result = run_cli(
        ["-t", "t", "--provider", "scripted", "--cwd", str(work), "-o", str(out)],
        cwd=tmp_path,
        env=hermetic_env(tmp_path, {"TINYAGENT_SCRIPT": str(script)}),
    )
    assert result.returncode == 0
    sent = load_json(out)
    assert sent["system_prompt"].count("Use tabs.") == 1
    assert sum(m.get("content", "").count("Use tabs.") for m in sent["messages"] if m.get("content")) == 1
    assert sent["resume"]["agents_md"] == "auto"
    os.remove(out)


def test_closing_summary_lines_exactly() -> None:
    import io

    from tinyagent.output import Reporter
    from tinyagent.trajectory.models import ExitStatus, Timing, Totals, Trajectory

    trajectory = Trajectory(
        tinyagent_version="0.1.0",
        task="t",
        provider="openai",
        model="m",
        system_prompt="s",
        messages=[],
        tools=[],
        totals=Totals(
            steps=3,
            input_tokens=1234,
            output_tokens=56,
            cache_read_tokens=7890,
            cache_write_tokens=12,
            cost_usd=0.01234,
            cost_known=False,
        ),
        exit_status=ExitStatus.STEP_LIMIT,
        exit_detail="step limit 3 reached (3 steps)",
        timing=Timing(started_at="2026-01-01T00:00:00Z", elapsed_seconds=4.567),
    )
    buffer = io.StringIO()
    Reporter(buffer, quiet=True).summary(trajectory, "/tmp/run.json", save_failed=False)
    assert buffer.getvalue().splitlines() == [
        "tinyagent: finished: status StepLimit (step limit 3 reached (3 steps))",
        "tinyagent: steps 3, elapsed 4.57 s, tokens: input 1,234 (uncached), output 56, cache read 7,890, "
        "cache write 12",
        "tinyagent: cost at least $0.0123 (some steps used a model with an unknown price)",
        "tinyagent: trajectory saved: /tmp/run.json",
    ]


def test_a_task_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tinyagent", "-t", b"caf\xe9", "--provider", "scripted"],
        cwd=tmp_path,
        env=hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == "tinyagent: error: the task is not valid UTF-8 text\n"
