"""Tools: bash (cwd, timeout with process-group kill, output cap), file tools, submit, error results."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.tools.capping import cap_output
from tinyagent.tools.process import SCRUBBED_ENV
from tinyagent.tools.specs import TOOL_SPECS, toolset_sha256
from tinyagent.tools.toolbox import Toolbox, ToolInfrastructureError
from tinyagent.types import ToolCall, ToolSpec


def run(box: Toolbox, name: str, **arguments: object):
    return box.run(ToolCall(id="c1", name=name, arguments=json.dumps(arguments)))


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    return Toolbox(tmp_path, timeout=20, output_cap=2000)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as dead.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_tool_specs_are_the_five_documented_tools() -> None:
    assert [spec.name for spec in TOOL_SPECS] == ["bash", "read_file", "write_file", "edit_file", "submit"]
    for spec in TOOL_SPECS:
        assert spec.parameters["type"] == "object"
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])


def test_toolset_digest_is_stable_and_sensitive_to_any_change() -> None:
    digest = toolset_sha256(TOOL_SPECS)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert toolset_sha256(list(TOOL_SPECS)) == digest
    changed = [TOOL_SPECS[0].model_copy(update={"description": "x"}), *TOOL_SPECS[1:]]
    assert toolset_sha256(changed) != digest
    assert toolset_sha256(list(reversed(TOOL_SPECS))) != digest


def test_bash_runs_in_the_working_directory_and_reports_exit_code(box: Toolbox, tmp_path: Path) -> None:
    result = run(box, "bash", command="pwd; echo err >&2; exit 3")
    assert not result.is_error
    assert result.content.splitlines() == ["exit code: 3", str(tmp_path), "err"]


def test_bash_stdin_is_empty_and_credentials_are_scrubbed(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in SCRUBBED_ENV:
        monkeypatch.setenv(name, "secret-value")
    monkeypatch.setenv("UNRELATED_SETTING", "kept")
    result = run(box, "bash", command='cat; env | grep -c secret-value; echo "$UNRELATED_SETTING"')
    assert result.content.splitlines() == ["exit code: 0", "0", "kept"]


def test_bash_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=1, output_cap=2000)
    result = run(box, "bash", command="sleep 60 & echo child=$!; sleep 60")
    assert result.is_error
    assert result.content.startswith("error: command timed out after 1 s; process group killed")
    child = int(re.search(r"child=(\d+)", result.content).group(1))
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_bash_background_process_holding_the_pipe_does_not_hang_the_call(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=30, output_cap=2000)
    result = run(box, "bash", command="(sleep 60; echo late) & echo started")
    assert not result.is_error
    assert result.content.startswith("exit code: 0\nstarted")
    assert "background processes holding the output were killed" in result.content


def test_bash_output_is_capped_with_head_tail_and_exact_marker(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=20, output_cap=1000)
    result = run(box, "bash", command="python3 -c \"print('A'*3000 + 'B'*3000, end='')\"")
    body = result.content.split("\n", 1)[1]
    assert body.startswith("A" * 500)
    assert body.endswith("B" * 500)
    assert "[... 5000 bytes elided: output exceeded the 1000-byte cap ...]" in body


def test_bash_huge_output_keeps_memory_bounded_and_counts_everything(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=30, output_cap=1000)
    result = run(box, "bash", command="head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END")
    assert "[... 4999005 bytes elided" in result.content
    assert result.content.endswith("END\n")


def test_bash_missing_command_is_an_error_result(box: Toolbox) -> None:
    result = run(box, "bash")
    assert result.is_error
    assert result.content == "error: argument 'command' is required and must be a string"


def test_file_tools_write_read_edit(box: Toolbox, tmp_path: Path) -> None:
    result = run(box, "write_file", path="sub/dir/a.txt", content="one\ntwo\nthree\n")
    assert result.content == "wrote 14 bytes to sub/dir/a.txt"
    assert (tmp_path / "sub/dir/a.txt").read_text() == "one\ntwo\nthree\n"
    assert run(box, "read_file", path="sub/dir/a.txt").content == "one\ntwo\nthree\n"
    assert run(box, "read_file", path="sub/dir/a.txt", offset=2, limit=1).content == "two\n"
    assert run(box, "read_file", path="sub/dir/a.txt", offset=3).content == "three\n"
    edited = run(box, "edit_file", path="sub/dir/a.txt", old_text="two", new_text="2")
    assert edited.content == "replaced 1 occurrence in sub/dir/a.txt"
    assert (tmp_path / "sub/dir/a.txt").read_text() == "one\n2\nthree\n"


def test_edit_file_refuses_absent_or_ambiguous_text_and_leaves_file_unchanged(
    box: Toolbox, tmp_path: Path
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("x = 1\nx = 1\n")
    ambiguous = run(box, "edit_file", path="f.txt", old_text="x = 1", new_text="x = 2")
    assert ambiguous.is_error
    assert "occurs 2 times" in ambiguous.content
    absent = run(box, "edit_file", path="f.txt", old_text="y", new_text="z")
    assert absent.is_error
    assert "not found" in absent.content
    empty = run(box, "edit_file", path="f.txt", old_text="", new_text="z")
    assert empty.content == "error: argument 'old_text' must not be empty"
    assert target.read_text() == "x = 1\nx = 1\n"


@pytest.mark.parametrize(
    ("setup", "arguments", "expected"),
    [
        (None, {"path": "missing.txt"}, "error: file not found"),
        ("dir", {"path": "d"}, "is a directory"),
        ("binary", {"path": "b.bin"}, "is not UTF-8 text"),
        ("text", {"path": "t.txt", "offset": 0}, "argument 'offset' must be a positive integer"),
        ("text", {"path": ""}, "argument 'path' must not be empty"),
        ("fifo", {"path": "pipe"}, "is not a regular file"),
    ],
)
def test_read_file_errors_are_results(box: Toolbox, tmp_path: Path, setup, arguments, expected) -> None:
    if setup == "dir":
        (tmp_path / "d").mkdir()
    elif setup == "binary":
        (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00")
    elif setup == "text":
        (tmp_path / "t.txt").write_text("x")
    elif setup == "fifo":
        os.mkfifo(tmp_path / "pipe")
    result = box.run(ToolCall(id="c", name="read_file", arguments=json.dumps(arguments)))
    assert result.is_error
    assert expected in result.content


def test_submit_returns_the_answer(box: Toolbox) -> None:
    result = run(box, "submit", answer="all done")
    assert result.submission == "all done"
    assert not result.is_error


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        (
            "nope",
            "{}",
            "error: unknown tool 'nope'; available: bash, edit_file, read_file, submit, write_file",
        ),
        ("bash", "{not json", "error: arguments are not valid JSON"),
        ("bash", "[1, 2]", "error: arguments must be a JSON object"),
        ("submit", '{"answer": 5}', "error: argument 'answer' is required and must be a string"),
        ("submit", "[" * 100_000, "error: arguments are nested too deeply"),
    ],
)
def test_model_mistakes_become_error_results(box: Toolbox, name: str, raw: str, expected: str) -> None:
    result = box.run(ToolCall(id="c", name=name, arguments=raw))
    assert result.is_error
    assert result.content.startswith(expected)


def test_a_vanished_working_directory_is_a_harness_failure(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    box = Toolbox(work)
    work.rmdir()
    with pytest.raises(ToolInfrastructureError, match="working directory is no longer available"):
        run(box, "bash", command="true")


def test_only_offered_tools_can_run(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, specs=[ToolSpec(name="bash", description="d", parameters={"type": "object"})])
    assert run(box, "submit", answer="x").content.startswith("error: unknown tool 'submit'; available: bash")


def test_interrupt_kills_the_running_command_and_blocks_later_ones(tmp_path: Path) -> None:
    import threading

    box = Toolbox(tmp_path, timeout=60)
    timer = threading.Timer(0.5, box.interrupt)
    timer.start()
    try:
        result = run(box, "bash", command="sleep 60")
    finally:
        timer.cancel()
    assert result.is_error
    assert result.content.startswith("error: command interrupted; process group killed")
    assert run(box, "bash", command="true").content == "error: not executed: the run was interrupted"


@given(st.binary(max_size=5000), st.integers(min_value=10, max_value=3000))
@settings(max_examples=200, deadline=None)
def test_cap_output_properties(data: bytes, cap: int) -> None:
    text = cap_output(data, cap)
    if len(data) <= cap:
        assert text == data.decode("utf-8", errors="replace")
    else:
        marker = re.search(r"\[\.\.\. (\d+) bytes elided: output exceeded the (\d+)-byte cap \.\.\.\]", text)
        assert marker is not None
        assert int(marker.group(1)) == len(data) - cap
        assert int(marker.group(2)) == cap
        assert text.startswith(data[: cap // 2].decode("utf-8", errors="replace"))


@given(
    st.text(alphabet="abc\n", max_size=60),
    st.text(alphabet="abc", min_size=1, max_size=4),
    st.text(alphabet="xyz\n", max_size=10),
)
@settings(max_examples=150, deadline=None)
def test_edit_file_matches_exact_unique_replacement(tmp_path_factory, text: str, old: str, new: str) -> None:
    work = tmp_path_factory.mktemp("edit")
    (work / "f.txt").write_text(text, encoding="utf-8")
    result = Toolbox(work).run(
        ToolCall(
            id="c",
            name="edit_file",
            arguments=json.dumps({"path": "f.txt", "old_text": old, "new_text": new}),
        )
    )
    after = (work / "f.txt").read_text(encoding="utf-8")
    if text.count(old) == 1:
        assert not result.is_error
        assert after == text.replace(old, new, 1)
    else:
        assert result.is_error
        assert after == text


def test_nul_byte_in_a_command_is_an_error_result_not_a_harness_failure(box: Toolbox) -> None:
    result = run(box, "bash", command="echo a\x00b")
    assert result.is_error
    assert result.content == "error: invalid argument (embedded null byte)"


def test_lone_surrogates_in_arguments_are_replaced(box: Toolbox, tmp_path: Path) -> None:
    raw = '{"path": "odd\\ud800.txt", "content": "x\\udfff"}'  # valid JSON escapes, invalid UTF-8 text
    result = box.run(ToolCall(id="c", name="write_file", arguments=raw))
    assert not result.is_error
    assert result.content == "wrote 4 bytes to odd\ufffd.txt"
    assert (tmp_path / "odd\ufffd.txt").read_text() == "x\ufffd"


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


@given(
    name=st.sampled_from(["read_file", "submit", "nope", ""]),
    raw=st.one_of(
        st.text(max_size=80),
        st.dictionaries(
            st.sampled_from(["path", "offset", "limit", "answer", "x"]), _JSON_VALUES, max_size=4
        ).map(json.dumps),
    ),
)
@settings(max_examples=300, deadline=None)
def test_any_arguments_yield_exactly_one_saveable_result(tmp_path_factory, name: str, raw: str) -> None:
    box = Toolbox(tmp_path_factory.mktemp("fuzz"), timeout=5)
    result = box.run(ToolCall(id="c", name=name, arguments=raw))
    result.content.encode("utf-8")  # always saveable
    if result.is_error:
        assert result.content.startswith("error: ")
        assert result.submission is None
