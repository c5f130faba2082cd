"""JSON / JSONC span edits: foreign entries, comments, odd formatting, CRLF, BOM and trailing commas kept."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.errors import InvalidInput
from graymatter.faces.wiring import jsonc
from graymatter.faces.wiring.jsonedit import get_member, remove_items, remove_member, set_member, upsert_item

ENTRY = {"command": "/opt/gm/bin/graymatter", "args": ["--dir", "/p/.graymatter", "mcp", "serve"]}
KEY = ("mcpServers", "graymatter")

REAL_WORLD = {
    "gemini-with-comments": """{
  // Gemini settings, hand-written
  "theme": "GitHub", /* the dark one */
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"], // pinned later
    },
  },
}
""",
    "vscode-crlf-tabs": '{\r\n\t"servers": {\r\n\t\t"other": {"type": "stdio", "command": "x"}\r\n\t},\r\n'
    '\t"inputs": []\r\n}\r\n',
    "bom-one-line": '\ufeff{"mcpServers": {"a": {"command": "a"}}, "z": 1}',
    "empty-object": "{}",
    "only-a-comment": "{\n    // nothing yet\n}\n",
    "four-spaces-no-newline-at-end": '{\n    "editor.fontSize": 14\n}',
    "claude-json-like": '{"numStartups": 3, "projects": {"/p": {"allowedTools": []}}, "userID": "u"}\n',
}


@pytest.mark.parametrize("name", sorted(REAL_WORLD))
def test_insert_then_remove_restores_the_bytes(name: str) -> None:
    text = REAL_WORLD[name]
    key = ("servers", "graymatter") if "vscode" in name else KEY
    wired = set_member(text, key, ENTRY)
    assert get_member(wired, key) == ENTRY
    assert remove_member(wired, key) == text


@pytest.mark.parametrize("name", sorted(REAL_WORLD))
def test_every_comment_and_foreign_value_survives(name: str) -> None:
    text = REAL_WORLD[name]
    wired = set_member(text, KEY, ENTRY)
    assert _comments(wired) == _comments(text)
    before, after = jsonc.loads(text), jsonc.loads(wired)
    assert isinstance(before, dict) and isinstance(after, dict)
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    assert {k: v for k, v in after["mcpServers"].items() if k != "graymatter"} == before.get("mcpServers", {})


def test_the_file_style_is_followed() -> None:
    crlf = set_member(REAL_WORLD["vscode-crlf-tabs"], ("servers", "graymatter"), ENTRY)
    assert "\n" not in crlf.replace("\r\n", "")
    assert '\r\n\t\t"graymatter": {\r\n\t\t\t"command"' in crlf
    trailing = set_member(REAL_WORLD["gemini-with-comments"], KEY, ENTRY)
    assert '// pinned later\n    },\n    "graymatter": {' in trailing
    assert trailing.rstrip().endswith("},\n  },\n}")
    bom = set_member(REAL_WORLD["bom-one-line"], KEY, ENTRY)
    assert bom.startswith('\ufeff{"mcpServers": {"a": {"command": "a"}, "graymatter": {"command": ')


def test_second_set_is_a_no_op_and_a_changed_entry_is_replaced_in_place() -> None:
    wired = set_member(REAL_WORLD["gemini-with-comments"], KEY, ENTRY)
    assert set_member(wired, KEY, ENTRY) == wired
    moved = set_member(wired, KEY, {**ENTRY, "command": "/new/graymatter"})
    assert get_member(moved, KEY) == {**ENTRY, "command": "/new/graymatter"}
    assert _comments(moved) == _comments(wired)
    assert remove_member(moved, KEY) == REAL_WORLD["gemini-with-comments"]


def test_a_new_file_is_plain_json() -> None:
    assert json.loads(set_member("", KEY, ENTRY)) == {"mcpServers": {"graymatter": ENTRY}}
    assert remove_member("", KEY) == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {"a": 1,,}}', r"^not valid JSON: expected a quoted key at line 1 column 24$"),
        ('{"a": 1', r"^not valid JSON: expected \",\" or \"}\" at the end of the file$"),
        ("[1, 2]", r"^the file does not hold a JSON object; fix it by hand$"),
        ('{"mcpServers": []}', r'^"mcpServers" is not a JSON object; fix it by hand$'),
        (
            '{"mcpServers": {}, "mcpServers": {}}',
            r'^the key "mcpServers" appears 2 times; remove the duplicates$',
        ),
        ('{"a": "unterminated}', r"^not valid JSON at line 1 column 7$"),
        ("{/* open comment", r"^not valid JSON at line 1 column 2$"),
    ],
)
def test_bad_files_are_refused_with_one_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        set_member(text, KEY, ENTRY)


def test_strict_files_refuse_comments_and_trailing_commas() -> None:
    with pytest.raises(
        InvalidInput, match=r"^comments are not allowed in this JSON file \(line 1 column 2\)$"
    ):
        set_member("{// no\n}", KEY, ENTRY, strict=True)
    with pytest.raises(InvalidInput, match="trailing comma"):
        set_member('{"a": 1,}', KEY, ENTRY, strict=True)
    assert json.loads(set_member('{"a": 1}', KEY, ENTRY, strict=True))["a"] == 1


def test_array_items_are_owned_by_predicate() -> None:
    text = '{\n  "hooks": {\n    "Stop": [\n      {"hooks": [{"command": "theirs"}]}\n    ]\n  }\n}\n'
    mine = {"hooks": [{"command": "/gm hook claude-code stop"}]}

    def owns(item: object) -> bool:
        return "/gm hook" in json.dumps(item)

    wired = upsert_item(text, ("hooks", "Stop"), mine, owns)
    assert get_member(wired, ("hooks", "Stop")) == [{"hooks": [{"command": "theirs"}]}, mine]
    assert upsert_item(wired, ("hooks", "Stop"), mine, owns) == wired
    newer = {"hooks": [{"command": "/gm hook claude-code stop --v2"}]}
    replaced = upsert_item(wired, ("hooks", "Stop"), newer, owns)
    assert get_member(replaced, ("hooks", "Stop")) == [{"hooks": [{"command": "theirs"}]}, newer]
    assert remove_items(replaced, ("hooks", "Stop"), owns) == text


# -- property tests -------------------------------------------------------------------------------------

_KEYS = st.text(alphabet="abcxyz_-", min_size=1, max_size=6)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text("ab \"'\\é", max_size=5))
_COMMENTS = st.sampled_from(["", " // note", " /* c */", "\n  // line\n", " /* multi\n line */"])


@st.composite
def jsonc_documents(draw: st.DrawFn) -> str:
    """A JSONC object with random members, comments between them, trailing commas and newline style."""
    keys = draw(st.lists(_KEYS, unique=True, max_size=5))
    indent = draw(st.sampled_from(["  ", "    ", "\t"]))
    members = [f"{json.dumps(k)}: {json.dumps(draw(_SCALARS))}" for k in keys]
    if draw(st.booleans()) and keys:
        inner = draw(st.sampled_from(["", " /* c */", "\n  // line\n"]))
        members[-1] = f'"mcpServers": {{"other": {{"command": "x"}}{inner}}}'
    parts = []
    for i, member in enumerate(members):
        comma = "," if i < len(members) - 1 or draw(st.booleans()) else ""
        parts.append(f"{indent}{member}{comma}{draw(_COMMENTS)}")
    body = "\n".join(parts)
    text = "{" + draw(_COMMENTS) + "\n" + body + ("\n" if body else "") + "}\n"
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


def _comments(text: str) -> list[str]:
    return [text[t.start : t.end] for t in jsonc.tokenize(text) if t.kind in ("line", "block")]


@settings(max_examples=300, deadline=None)
@given(jsonc_documents())
def test_round_trip_keeps_data_and_comments(text: str) -> None:
    before = jsonc.loads(text)
    assert isinstance(before, dict)
    servers = before.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        with pytest.raises(InvalidInput):
            set_member(text, KEY, ENTRY)
        return
    wired = set_member(text, KEY, ENTRY)
    assert _comments(wired) == _comments(text)
    assert get_member(wired, KEY) == ENTRY
    assert set_member(wired, KEY, ENTRY) == wired
    unwired = remove_member(wired, KEY)
    assert _comments(unwired) == _comments(text)
    expected = dict(before)
    if servers == {}:
        expected.pop("mcpServers")
    assert jsonc.loads(unwired) == expected
    # Byte identity, except where the wired text cannot tell the originals apart: an empty "mcpServers"
    # (pruned with the entry) and an empty object whose blank inside was "" or a newline (both give "{}").
    if servers != {} and (before or _comments(text)):
        assert unwired == text


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3)
    )
)
def test_the_reader_agrees_with_json(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2)):
        assert jsonc.loads(text, strict=True) == json.loads(text)


def test_a_large_strict_file_round_trips() -> None:
    history = [{"display": "x" * 40, "pastedContents": {}} for _ in range(10)]
    projects = {f"/home/me/p{i}": {"history": history, "allowedTools": []} for i in range(2000)}
    text = json.dumps({"numStartups": 7, "projects": projects, "userID": "u"}, indent=2) + "\n"
    assert len(text) > 2_000_000
    wired = set_member(text, KEY, ENTRY, strict=True)
    assert wired.startswith(text[:-3]) and get_member(wired, KEY, strict=True) == ENTRY
    assert remove_member(wired, KEY, strict=True) == text


def test_positions_in_errors_are_lines_and_columns() -> None:
    assert re.search(r"line 3 column 3", _error('{\n  "a": 1,\n  ]\n}'))


def _error(text: str) -> str:
    with pytest.raises(InvalidInput) as caught:
        jsonc.loads(text)
    return str(caught.value)


@st.composite
def hook_documents(draw: st.DrawFn) -> str:
    """A settings file whose ``hooks.Stop`` array holds foreign groups, comments and a trailing comma."""
    groups = draw(
        st.lists(st.sampled_from(['{"hooks": [{"command": "lint"}]}', '{"matcher": "x"}', '"odd"']))
    )
    comments = [draw(_COMMENTS) for _ in groups]
    items = [f"      {group}{',' if i < len(groups) - 1 or draw(st.booleans()) else ''}{comments[i]}"
             for i, group in enumerate(groups)]  # fmt: skip
    body = "\n".join(items)
    return '{\n  "hooks": {\n    "Stop": [\n' + body + ("\n" if body else "") + "    ]\n  }\n}\n"


@settings(max_examples=200, deadline=None)
@given(hook_documents())
def test_array_round_trip_keeps_foreign_items_and_comments(text: str) -> None:
    mine = {"hooks": [{"command": "/gm hook claude-code session-end"}]}

    def owns(item: object) -> bool:
        return "/gm hook" in json.dumps(item)

    wired = upsert_item(text, ("hooks", "Stop"), mine, owns)
    before = get_member(text, ("hooks", "Stop"))
    assert isinstance(before, list)
    assert get_member(wired, ("hooks", "Stop")) == [*before, mine]
    assert _comments(wired) == _comments(text)
    assert upsert_item(wired, ("hooks", "Stop"), mine, owns) == wired
    unwired = remove_items(wired, ("hooks", "Stop"), owns)
    assert _comments(unwired) == _comments(text)
    assert get_member(unwired, ("hooks", "Stop")) == before
    if before:
        assert unwired == text
