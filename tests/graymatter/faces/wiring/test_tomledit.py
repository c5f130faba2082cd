"""TOML span edits for Codex's config.toml: comments, foreign tables, key order and CRLF kept."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.tomledit import get_table, remove_table, render_table, set_table

PATH = ("mcp_servers", "graymatter")
ENTRY: dict[str, object] = {
    "command": "/opt/gm/bin/graymatter",
    "args": ["--dir", "/p/.graymatter", "mcp", "serve"],
    "required": True,
    "startup_timeout_sec": 30.0,
}

CODEX_CONFIG = """# Codex config, by hand
model = "gpt-5" # the default model
approval_policy = "on-request"

[model_providers.local]
base_url = "http://127.0.0.1:8080/v1"   # fixture
env_key = "LOCAL_KEY"
wire_api = "responses"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[mcp_servers.github.env]
GITHUB_TOKEN_ENV = "GH"

# features last
[features]
web_search = false
"""


@pytest.mark.parametrize(
    "text",
    [
        CODEX_CONFIG,
        CODEX_CONFIG.replace("\n", "\r\n"),
        "",
        'model = "o3"\n',
        "# only a comment\n",
        "\ufeffa = 1\n",
    ],
)
def test_set_then_remove_restores_the_bytes(text: str) -> None:
    wired = set_table(text, PATH, ENTRY)
    assert get_table(wired, PATH) == ENTRY
    assert wired.startswith(text.rstrip("\r\n")) or not text.strip()
    assert set_table(wired, PATH, ENTRY) == wired
    assert remove_table(wired, PATH) == text


def test_foreign_tables_and_comments_are_untouched() -> None:
    wired = set_table(CODEX_CONFIG, PATH, {**ENTRY, "env": {"GRAYMATTER_AGENT_ID": "p"}})
    assert wired.startswith(CODEX_CONFIG + "\n[mcp_servers.graymatter]\n")
    assert wired.endswith('\n[mcp_servers.graymatter.env]\nGRAYMATTER_AGENT_ID = "p"\n')
    data = tomllib.loads(wired)
    assert data["mcp_servers"]["github"]["env"] == {"GITHUB_TOKEN_ENV": "GH"}
    assert data["features"] == {"web_search": False}
    crlf = set_table(CODEX_CONFIG.replace("\n", "\r\n"), PATH, ENTRY)
    assert "\n" not in crlf.replace("\r\n", "")


def test_a_changed_entry_is_rewritten_and_user_lines_after_it_survive() -> None:
    wired = set_table(CODEX_CONFIG, PATH, ENTRY) + '\n# mine\n[profiles.fast]\nmodel = "o4"\n'
    moved = set_table(wired, PATH, {**ENTRY, "command": "/new/graymatter"})
    assert get_table(moved, PATH) == {**ENTRY, "command": "/new/graymatter"}
    assert "# mine\n[profiles.fast]" in moved and moved.startswith(CODEX_CONFIG)
    unwired = remove_table(moved, PATH)
    assert tomllib.loads(unwired) == tomllib.loads(CODEX_CONFIG + '[profiles.fast]\nmodel = "o4"\n')
    assert "# mine" in unwired and "# features last" in unwired


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model = ", r"^not valid TOML: "),
        (
            'mcp_servers = { graymatter = { command = "x" } }',
            r"^\[mcp_servers.graymatter\] is not written as a table",
        ),
        (
            '[mcp_servers]\ngraymatter.command = "x"\n',
            r"^\[mcp_servers.graymatter\] is not written as a table",
        ),
        ('mcp_servers = { other = { command = "x" } }', "changes more than graymatter's table"),
    ],
)
def test_shapes_graymatter_did_not_write_are_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        set_table(text, PATH, ENTRY)


def test_keys_that_need_quotes_are_quoted() -> None:
    text = render_table(("mcp_servers", "my server"), {"a.b": "x", "args": ["é", 'q"']})
    assert text == '[mcp_servers."my server"]\n"a.b" = "x"\nargs = ["\\u00e9", "q\\""]\n'
    assert tomllib.loads(text) == {"mcp_servers": {"my server": {"a.b": "x", "args": ["é", 'q"']}}}


_LINES = st.sampled_from(
    [
        "# comment",
        "",
        'x = "v"  # trailing',
        "[other]",
        "k = 1",
        "[mcp_servers.other]",
        'command = "c"',
        "[z.y]",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=10), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_round_trip_keeps_every_other_line(lines: list[str], newline: str, final: bool) -> None:
    text = newline.join(lines) + (newline if final and lines else "")
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # duplicate tables or keys: not a document to edit
    wired = set_table(text, PATH, ENTRY)
    data = tomllib.loads(wired)
    assert data["mcp_servers"]["graymatter"] == ENTRY
    unwired = remove_table(wired, PATH)
    assert tomllib.loads(unwired) == before
    assert unwired == text or not text.strip() or not text.endswith(newline)
