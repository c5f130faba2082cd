"""Hook registrations merged into real-world settings files: foreign hooks kept, idempotent, exact removal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter.faces.wiring.clients import Homes, client, launch_for
from graymatter.faces.wiring.edits import JsonEdit, WiringContext, install_text, uninstall_text
from graymatter.faces.wiring.hooks_settings import is_graymatter_group, is_graymatter_handler, wiring_edits

EXE = "/opt/graymatter/bin/graymatter"

CLAUDE_SETTINGS = """{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}
    ],
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "echo welcome"}]}
    ]
  },
  "model": "opus"
}
"""

GEMINI_SETTINGS = """// user settings, edited by hand
{
  "theme": "GitHub", // keep me
  "hooks": {
    "BeforeAgent": [
      {
        "hooks": [
          {"type": "command", "command": "node ./lint-prompt.js", "name": "lint", "timeout": 2000},
        ],
      },
    ],
  },
}
"""

CODEX_HOOKS = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}\n'


def context(tmp_path: Path, name: str, scope: str = "project", *, wired: bool | None = None) -> WiringContext:
    root = tmp_path / "proj"
    wired = scope == "project" if wired is None else wired  # as init: global leaves the store to routing
    store = root / ".graymatter" if wired else None
    homes = Homes.from_env({"HOME": str(tmp_path / "home")})
    return WiringContext(client(name), scope, homes, root, store, launch_for(store, [EXE]))  # type: ignore[arg-type]


def install(edits: list[JsonEdit], text: str | None) -> str:
    for edit in edits:
        text = install_text(edit, text)
    assert text is not None
    return text


def uninstall(edits: list[JsonEdit], text: str) -> str | None:
    current: str | None = text
    for edit in edits:
        if current is None:
            break
        current = uninstall_text(edit, current)
    return current


def json_edits(ctx: WiringContext) -> list[JsonEdit]:
    edits = wiring_edits(ctx)
    assert all(isinstance(e, JsonEdit) for e in edits)
    return edits  # type: ignore[return-value]


def test_claude_code_gets_four_exec_form_hooks_beside_its_foreign_ones(tmp_path: Path) -> None:
    edits = json_edits(context(tmp_path, "claude-code"))
    assert {e.path for e in edits} == {tmp_path / "proj" / ".claude" / "settings.json"}
    merged = install(edits, CLAUDE_SETTINGS)
    data = json.loads(merged)
    assert data["permissions"] == {"allow": ["Bash(npm test)"]} and data["model"] == "opus"
    assert data["hooks"]["PreToolUse"] == json.loads(CLAUDE_SETTINGS)["hooks"]["PreToolUse"]
    foreign, ours = data["hooks"]["SessionStart"]
    assert foreign == {"matcher": "startup", "hooks": [{"type": "command", "command": "echo welcome"}]}
    store = str(tmp_path / "proj" / ".graymatter")
    assert ours == {
        "matcher": "startup|resume|clear|compact",
        "hooks": [
            {
                "type": "command",
                "command": EXE,
                "args": ["--dir", store, "hook", "claude-code", "session-start"],
                "timeout": 10,
            }
        ],
    }
    assert data["hooks"]["UserPromptSubmit"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": EXE,
                    "args": ["--dir", store, "hook", "claude-code", "user-prompt"],
                    "timeout": 10,
                }
            ]
        }
    ]
    assert [
        g["hooks"][0]["args"][-1] for g in (data["hooks"]["PreCompact"][0], data["hooks"]["SessionEnd"][0])
    ] == [
        "pre-compact",
        "session-end",
    ]
    assert install(edits, merged) == merged
    assert uninstall(edits, merged) == CLAUDE_SETTINGS


def test_gemini_gets_millisecond_timeouts_in_its_own_event_names_and_keeps_comments(tmp_path: Path) -> None:
    edits = json_edits(context(tmp_path, "gemini"))
    merged = install(edits, GEMINI_SETTINGS)
    assert "// user settings, edited by hand" in merged and '"theme": "GitHub", // keep me' in merged
    assert [e.key for e in edits] == [
        ("hooks", n)
        for n in ("SessionStart", "BeforeAgent", "SessionEnd")  # PreCompress fires every turn
    ]
    assert "matcher" not in edits[0].value  # type: ignore[operator]  # Gemini compares matchers exactly
    before_agent = edits[1].value
    assert before_agent == {
        "hooks": [
            {
                "name": "graymatter-user-prompt",
                "type": "command",
                "command": f"{EXE} --dir {tmp_path / 'proj' / '.graymatter'} hook gemini user-prompt",
                "timeout": 10000,
            }
        ]
    }
    assert "node ./lint-prompt.js" in merged
    assert install(edits, merged) == merged
    assert uninstall(edits, merged) == GEMINI_SETTINGS


def test_codex_hooks_json_holds_only_the_hooks_key_and_shell_commands(tmp_path: Path) -> None:
    edits = json_edits(context(tmp_path, "codex"))
    assert {e.path for e in edits} == {tmp_path / "proj" / ".codex" / "hooks.json"}
    merged = install(edits, CODEX_HOOKS)
    data = json.loads(merged)
    assert list(data) == ["hooks"]
    assert data["hooks"]["Stop"] == json.loads(CODEX_HOOKS)["hooks"]["Stop"]
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    command = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{EXE} --dir {tmp_path / 'proj' / '.graymatter'} hook codex user-prompt"
    assert "0." not in command.replace(str(tmp_path), "")  # no version: Codex keeps trusting it
    assert uninstall(edits, merged) == CODEX_HOOKS
    fresh = install(edits, None)
    assert uninstall(edits, fresh) is None


def test_user_wide_hooks_go_to_the_home_and_never_create_a_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    expected = {
        "claude-code": home / ".claude" / "settings.json",
        "codex": home / ".codex" / "hooks.json",
        "gemini": home / ".gemini" / "settings.json",
        "qwen": home / ".qwen" / "settings.json",
    }
    for name, path in expected.items():
        edits = json_edits(context(tmp_path, name, scope="global"))
        assert {e.path for e in edits} == {path}
        events = []
        for edit in edits:
            handler = edit.value["hooks"][0]  # type: ignore[index]
            words = (
                [handler["command"], *handler["args"]] if "args" in handler else handler["command"].split()
            )
            assert words[0] == EXE and "--dir" not in words
            assert words[1:3] == ["hook", name] and words[-1] == "--no-create"
            events.append(words[3])
        every = ["session-start", "user-prompt", "pre-compact", "session-end"]
        assert events == [e for e in every if name != "gemini" or e != "pre-compact"]


def test_a_user_wide_file_wired_to_a_store_may_create_it(tmp_path: Path) -> None:
    # `init --client codex` in a project: Codex has only user-wide config, so its hooks go there, with the
    # project's store, as its MCP entry does.
    edits = json_edits(context(tmp_path, "codex", scope="global", wired=True))
    assert {e.path for e in edits} == {tmp_path / "home" / ".codex" / "hooks.json"}
    command = edits[1].value["hooks"][0]["command"]  # type: ignore[index]
    assert command == f"{EXE} --dir {tmp_path / 'proj' / '.graymatter'} hook codex user-prompt"


def test_a_stale_graymatter_hook_is_replaced_and_a_shared_group_is_left_alone(tmp_path: Path) -> None:
    old = {
        "type": "command",
        "command": "/old/venv/bin/graymatter",
        "args": ["hook", "claude-code", "user-prompt"],
    }
    mixed = {
        "hooks": [
            {"type": "command", "command": "/old/venv/bin/graymatter hook claude-code user-prompt"},
            {"type": "command", "command": "date"},
        ]
    }
    text = json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [old]}, mixed]}}, indent=2) + "\n"
    edits = json_edits(context(tmp_path, "claude-code"))
    merged = json.loads(install(edits, text))
    groups = merged["hooks"]["UserPromptSubmit"]
    assert groups[0] == mixed
    assert groups[1]["hooks"][0]["command"] == EXE and len(groups) == 2


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "graymatter hook claude-code session-start"},
        {"command": "/x/bin/graymatter --dir '/a b/.graymatter' hook qwen user-prompt --no-create"},
        {"command": "/usr/bin/python3", "args": ["-m", "graymatter", "hook", "codex", "pre-compact"]},
        {"command": "/x/graymatter", "args": ["--dir", "/s", "hook", "gemini", "session-end"]},
    ],
)
def test_graymatter_handlers_are_recognised_in_every_spelling(entry: dict[str, object]) -> None:
    assert is_graymatter_handler(entry)


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "echo hook claude-code session-start"},
        {"command": "graymatter recall my-app hook"},
        {"command": "/x/bin/graymatter hook vim session-start"},
        {"command": "hook.sh"},
        {"command": 7},
        "graymatter hook claude-code session-start",
    ],
)
def test_foreign_handlers_are_never_claimed(entry: object) -> None:
    assert not is_graymatter_handler(entry)


@given(st.text(max_size=60).filter(lambda s: "graymatter" not in s))
def test_no_command_without_graymatter_in_it_is_claimed(command: str) -> None:
    assert not is_graymatter_group({"hooks": [{"type": "command", "command": command}]})
