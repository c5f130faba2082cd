"""``graymatter hook CLIENT EVENT`` through real subprocesses on real SQLite stores."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.faces.hooks.payload import MAX_PAYLOAD_BYTES

Runner = Callable[..., Any]
Logs = Callable[[Path], list[dict[str, Any]]]
Env = Callable[..., dict[str, str]]


def seed(store: Path, agent: str = "my-app") -> Memory:
    memory = Memory(store, config=MemoryConfig(), embedder=None, summariser=None)
    memory.remember(agent, "the billing service stores invoices in PostgreSQL")
    memory.remember_shared("every service logs JSON to stdout")
    memory.checkpoint_save(agent, {"task": "migrate invoices", "step": 3})
    return memory


def test_session_start_injects_the_last_checkpoint_and_agent_and_shared_facts(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    seed(project / ".graymatter").close()
    result = run_hook("claude-code", "session-start", {"session_id": "s1", "source": "startup"})
    assert (result.code, result.stderr) == (0, "")
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = result.context()
    assert context.startswith("[graymatter hook recall ran for agent_id=my-app] ")
    assert '<graymatter-memory agent_id="my-app" kind="session-start">' in context
    assert context.endswith("</graymatter-memory>")
    assert 'state: {"step": 3, "task": "migrate invoices"}' in context
    assert "- the billing service stores invoices in PostgreSQL" in context
    assert "- every service logs JSON to stdout" in context
    [record] = log_records(project / ".graymatter")
    assert record["outcome"] == "injected"
    assert (record["client"], record["event"], record["agent_id"], record["session"]) == (
        "claude-code",
        "session-start",
        "my-app",
        "s1",
    )
    assert (record["facts"], record["shared"], record["checkpoint"]) == (1, 1, True)
    assert record["chars"] == len(context) and record["tokens"] == (len(context) + 3) // 4


def test_remember_prompts_are_stored_at_once_and_acknowledged(project: Path, run_hook: Runner) -> None:
    store = project / ".graymatter"
    seed(store).close()
    mine = run_hook(
        "claude-code", "user-prompt", {"session_id": "s1", "prompt": "Remember: deploys go to fly.io"}
    )
    shared = run_hook(
        "qwen", "user-prompt", {"session_id": "s1", "prompt": "remember shared:  use UTC times"}
    )
    for result in (mine, shared):
        assert (result.code, result.stderr) == (0, "")
        assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert mine.context().endswith("(it does not need to be stored again): deploys go to fly.io")
    assert json.loads(mine.stdout)["systemMessage"].startswith("graymatter: remembered in agent my-app (")
    assert "the shared namespace __shared__" in shared.context()
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        assert [f.text for f in memory.list("my-app")][-1] == "deploys go to fly.io"
        assert [f.text for f in memory.list("__shared__")][-1] == "use UTC times"
        assert memory.list("my-app")[-1].provenance.client == "claude-code hook"


def test_per_prompt_recall_uses_the_clients_event_name(project: Path, run_hook: Runner) -> None:
    seed(project / ".graymatter").close()
    result = run_hook("gemini", "user-prompt", {"session_id": "g1", "prompt": "where are invoices stored?"})
    assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "- the billing service stores invoices in PostgreSQL" in result.context()
    assert 'kind="recall"' in result.context()


def test_an_identical_block_is_not_injected_twice_in_one_session(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    store = project / ".graymatter"
    seed(store).close()
    prompt = {"prompt": "which database holds invoices?"}
    first = run_hook("claude-code", "user-prompt", {"session_id": "s1", **prompt})
    again = run_hook("claude-code", "user-prompt", {"session_id": "s1", **prompt})
    other = run_hook("claude-code", "user-prompt", {"session_id": "s2", **prompt})
    anonymous = [run_hook("claude-code", "user-prompt", prompt) for _ in range(2)]
    assert first.stdout and other.stdout and all(r.stdout for r in anonymous)
    assert (again.code, again.stdout) == (0, "")
    assert first.context() == other.context()
    compacted = run_hook("claude-code", "session-start", {"session_id": "s1", "source": "compact"})
    after = run_hook("claude-code", "user-prompt", {"session_id": "s1", **prompt})
    assert compacted.stdout and after.context() == first.context()
    outcomes = [r["outcome"] for r in log_records(store)]
    assert outcomes == ["injected", "repeated", "injected", "injected", "injected", "injected", "injected"]
    state = store / "hooks-state.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert set(json.loads(state.read_text())["sessions"]) == {"s1", "s2"}


def test_a_resumed_session_keeps_its_dedupe_state(project: Path, run_hook: Runner) -> None:
    seed(project / ".graymatter").close()
    prompt = {"session_id": "s1", "prompt": "which database holds invoices?"}
    assert run_hook("codex", "user-prompt", prompt).stdout
    assert run_hook("codex", "session-start", {"session_id": "s1", "source": "resume"}).stdout
    assert run_hook("codex", "user-prompt", prompt).stdout == ""


def test_pre_compact_and_session_end_checkpoint_and_carry_the_agents_state(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    store = project / ".graymatter"
    seed(store).close()
    compact = run_hook("claude-code", "pre-compact", {"session_id": "s1", "trigger": "auto"})
    end = run_hook("gemini", "session-end", {"session_id": "s1", "reason": "exit"})
    assert [(r.code, r.stdout, r.stderr) for r in (compact, end)] == [(0, "", "")] * 2
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        newest, middle, first = memory.checkpoint_list("my-app")
    assert first.state == {"task": "migrate invoices", "step": 3}
    assert middle.state == {
        "task": "migrate invoices",
        "step": 3,
        "graymatter_hook": {
            "event": "pre-compact",
            "client": "claude-code",
            "session_id": "s1",
            "trigger": "auto",
        },
    }
    assert newest.state["graymatter_hook"] == {
        "event": "session-end",
        "client": "gemini",
        "session_id": "s1",
        "reason": "exit",
    }
    assert newest.metadata == {
        "source": "hook",
        "client": "gemini",
        "event": "session-end",
        "carried_from": middle.id,
    }
    assert [r["outcome"] for r in log_records(store)] == ["checkpoint", "checkpoint"]


def test_gemini_remember_is_found_behind_the_session_context_it_prepends(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    seed(project / ".graymatter").close()
    prompt = (
        "<hook_context>[graymatter hook recall ran ...]\n</hook_context>\n\nremember: builds run on Fridays"
    )
    result = run_hook("gemini", "user-prompt", {"session_id": "g", "prompt": prompt})
    assert result.context().endswith("(it does not need to be stored again): builds run on Fridays")
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None) as memory:
        assert memory.list("my-app")[-1].text == "builds run on Fridays"


def test_an_agent_without_a_checkpoint_gets_no_hook_only_checkpoint(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    store = project / ".graymatter"
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        memory.remember("my-app", "a fact but no checkpoint")
    for event in ("pre-compact", "session-end"):
        assert run_hook("claude-code", event, {"session_id": "s1"}).stdout == ""
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        assert memory.checkpoint_list("my-app") == []
    assert [(r["outcome"], r["checkpoint"]) for r in log_records(store)] == [("nothing", "none to carry")] * 2


def test_a_broken_store_prints_nothing_exits_0_and_logs_one_line(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    store = project / ".graymatter"
    store.mkdir(mode=0o700)
    (store / "graymatter.db").write_bytes(b"this is not a database" * 100)
    for event, payload in (
        ("session-start", {"session_id": "s1", "source": "startup"}),
        ("user-prompt", {"session_id": "s1", "prompt": "remember: sk-hidden-value"}),
    ):
        result = run_hook("claude-code", event, payload)
        assert (result.code, result.stdout, result.stderr) == (0, "", "")
    records = log_records(store)
    assert [(r["event"], r["outcome"], r["error"], r["code"]) for r in records] == [
        ("session-start", "error", "CorruptDatabase", "corrupt_database"),
        ("user-prompt", "error", "CorruptDatabase", "corrupt_database"),
    ]
    assert "sk-hidden-value" not in (store / "hooks.log").read_text()
    assert stat.S_IMODE((store / "hooks.log").stat().st_mode) == 0o600


def test_reads_never_create_a_store_and_global_hooks_never_write_one(project: Path, run_hook: Runner) -> None:
    assert run_hook("claude-code", "session-start", {"session_id": "s1"}).stdout == ""
    assert run_hook("claude-code", "user-prompt", {"prompt": "what is the build?"}).stdout == ""
    assert run_hook("claude-code", "user-prompt", {"prompt": "remember: x"}, "--no-create").stdout == ""
    assert run_hook("codex", "pre-compact", {"session_id": "s1"}, "--no-create").stdout == ""
    assert sorted(p.name for p in project.iterdir()) == [".git"]


def test_a_wired_project_hook_creates_the_routed_store_to_save(project: Path, run_hook: Runner) -> None:
    result = run_hook("claude-code", "user-prompt", {"prompt": "remember: the linter is ruff"})
    assert result.context().endswith("the linter is ruff")
    store = project / ".graymatter"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        assert [f.text for f in memory.list("my-app")] == ["the linter is ruff"]


def test_the_clients_project_dir_routes_and_other_clients_variables_are_ignored(
    tmp_path: Path, project: Path, run_hook: Runner, hook_env: Env
) -> None:
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    env = hook_env(CLAUDE_PROJECT_DIR=str(project), GEMINI_PROJECT_DIR=str(elsewhere))
    note = {"prompt": "remember: routed by CLAUDE_PROJECT_DIR", "cwd": str(sub)}
    assert run_hook("claude-code", "user-prompt", note, env=env, cwd=sub).stdout
    codex = {"prompt": "remember: routed by the payload cwd", "cwd": str(elsewhere)}
    assert run_hook("codex", "user-prompt", codex, env=env, cwd=sub).stdout
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None) as memory:
        assert [f.text for f in memory.list("my-app")] == ["routed by CLAUDE_PROJECT_DIR"]
    with Memory(elsewhere / ".graymatter", config=MemoryConfig(), embedder=None) as memory:
        assert [f.text for f in memory.list("elsewhere")] == ["routed by the payload cwd"]


def test_bad_payloads_print_nothing_and_log_the_reason(
    project: Path, run_hook: Runner, log_records: Logs
) -> None:
    store = project / ".graymatter"
    seed(store).close()
    oversized = json.dumps({"prompt": "q" * MAX_PAYLOAD_BYTES}).encode()
    for raw in (oversized, b"{broken", b"[]"):
        result = run_hook("claude-code", "user-prompt", raw)
        assert (result.code, result.stdout, result.stderr) == (0, "", "")
    assert [(r["outcome"], r["error"], r["code"]) for r in log_records(store)] == [
        ("error", "PayloadError", "hook_payload")
    ] * 3


def test_a_bom_or_an_empty_payload_still_works(project: Path, run_hook: Runner) -> None:
    seed(project / ".graymatter").close()
    bom = b"\xef\xbb\xbf" + json.dumps({"cwd": str(project), "source": "startup"}).encode()
    assert "migrate invoices" in run_hook("claude-code", "session-start", bom).context()
    assert "migrate invoices" in run_hook("claude-code", "session-start", b"").context()
    assert run_hook("claude-code", "user-prompt", b"").stdout == ""


def test_an_unknown_client_or_event_exits_0_with_a_note_on_stderr(run_hook: Runner) -> None:
    result = run_hook("vim", "session-start", {})
    assert (result.code, result.stdout) == (0, "")
    assert result.stderr == "graymatter hook: session-start failed (UnknownHook); nothing injected\n"
