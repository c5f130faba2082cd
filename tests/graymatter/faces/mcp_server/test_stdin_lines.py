"""StdinLines: MCP messages read from a real pipe on the event loop, split and bounded as documented.

* Any sequence of lines, cut into any chunks, comes out as the same messages in order (hypothesis), with
  ``\\r\\n`` line ends and an unterminated last line at end of input.
* A line over the bound comes out as ``LineTooLong`` and the next line is read normally; nothing of the
  long line is kept.
* Over a real ``graymatter mcp serve``: an over-long line is answered ``-32600`` and the session goes on;
  a stdin that is a regular file is served by the SDK's own reader; both stdio pipes are widened to
  1 MiB while serving.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter.faces.mcp_server.stdin_lines import LineTooLong, StdinLines, waitable
from support.mcp_session import initialize_request
from support.processes import graymatter_command, server_env

pytestmark = pytest.mark.timeout(120)


def _read_all(chunks: list[bytes], bound: int = 1 << 20) -> list[Any]:
    """Everything a StdinLines over a real pipe yields while ``chunks`` are written into it, then EOF."""
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as pipe:
            for chunk in chunks:
                pipe.write(chunk)

    writer = threading.Thread(target=feed)
    writer.start()

    async def drain() -> list[Any]:
        return [item async for item in StdinLines(read_fd, bound)]

    try:
        return anyio.run(drain)
    finally:
        writer.join()
        os.close(read_fd)


def _ping(request_id: int, note: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"_meta": {"n": note}}}
    ).encode()


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    notes=st.lists(st.text(max_size=40), min_size=1, max_size=12),
    crlf=st.lists(st.booleans(), min_size=12, max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
    terminated=st.booleans(),
)
def test_any_chunking_yields_the_same_messages_in_order(
    notes: list[str], crlf: list[bool], cuts: list[int], terminated: bool
) -> None:
    lines = [_ping(i, note) + (b"\r\n" if crlf[i] else b"\n") for i, note in enumerate(notes)]
    data = b"".join(lines)
    if not terminated:
        data = data.rstrip(b"\r\n")
    items = _read_all(_cut(data, cuts))
    assert [item.message.id for item in items] == list(range(len(notes)))
    assert [item.message.params["_meta"]["n"] for item in items] == notes


def test_unreadable_lines_come_out_as_exceptions_in_their_place() -> None:
    items = _read_all([b"not json{\n", _ping(1, "a") + b"\n", b'{"no": "jsonrpc"}\n', b"\n", _ping(2, "b")])
    kinds = [type(item).__name__ for item in items]
    assert kinds == [
        "ValidationError",
        "SessionMessage",
        "ValidationError",
        "ValidationError",
        "SessionMessage",
    ]


def test_invalid_utf8_is_replaced_as_the_sdk_reader_does() -> None:
    line = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {"n": "a\xffb"}}}\n'
    (item,) = _read_all([line])
    assert item.message.params["_meta"]["n"] == "a\ufffdb"


@pytest.mark.parametrize("split", [False, True])
def test_a_line_over_the_bound_is_skipped_and_reading_goes_on(split: bool) -> None:
    long_line = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"y" * 5000 + b'"}}\n'
    data = long_line + _ping(2, "after") + b"\n"
    chunks = _cut(data, list(range(0, len(data), 700))) if split else [data]
    items = _read_all(chunks, bound=4096)
    assert isinstance(items[0], LineTooLong)
    assert str(items[0]) == "a JSON-RPC line over 4096 bytes was skipped"
    assert [item.message.id for item in items[1:]] == [2]


def test_only_descriptors_the_loop_can_wait_on_are_read_on_the_loop(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    regular = tmp_path / "requests.jsonl"
    regular.write_bytes(b"")
    with open(regular, "rb") as file, open(os.devnull, "rb") as null:
        assert waitable(read_fd)
        assert not waitable(file.fileno())
        assert not waitable(null.fileno())
    os.close(read_fd)
    os.close(write_fd)


INIT = initialize_request()


def _initialized_server(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A real ``graymatter mcp serve`` on pipes, its ``initialize`` answered."""
    process = subprocess.Popen(
        graymatter_command(tmp_path / "s", "mcp", "serve"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(GRAYMATTER_MCP_WARM="0"),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INIT).encode() + b"\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    return process


def test_serve_answers_an_over_long_line_and_goes_on(tmp_path: Path) -> None:
    from graymatter.faces.mcp_server.stdin_lines import MAX_LINE_BYTES

    process = _initialized_server(tmp_path)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    filler = b" " * (1 << 20)
    process.stdin.write(b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"x": "')
    for _ in range(MAX_LINE_BYTES // len(filler) + 1):
        process.stdin.write(filler)
    process.stdin.write(b'"}}\n' + _ping(6, "after") + b"\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline()) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request"},
    }
    assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 6, "result": {}}
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""


def test_serve_reads_a_regular_file_with_the_sdk_reader(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    lines = [
        json.dumps(INIT),
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        _ping(2, "x").decode(),
    ]
    requests.write_text("\n".join(lines) + "\n")
    with open(requests, "rb") as stdin:
        done = subprocess.run(
            graymatter_command(tmp_path / "s", "mcp", "serve"),
            stdin=stdin,
            capture_output=True,
            env=server_env(GRAYMATTER_MCP_WARM="0"),
            timeout=60,
        )
    assert done.returncode == 0, done.stderr.decode()[-300:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe capacities are a Linux feature")
def test_serve_widens_both_stdio_pipes(tmp_path: Path) -> None:
    from graymatter.faces.mcp_server.stdio import PIPE_BYTES

    process = _initialized_server(tmp_path)
    assert process.stdin is not None and process.stdout is not None
    widened = [fcntl.fcntl(f.fileno(), fcntl.F_GETPIPE_SZ) for f in (process.stdin, process.stdout)]
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    read_fd, write_fd = os.pipe()
    fresh = fcntl.fcntl(read_fd, fcntl.F_GETPIPE_SZ)
    os.close(read_fd)
    os.close(write_fd)
    assert fresh < PIPE_BYTES  # the default is narrower: the server widened them
    assert widened == [PIPE_BYTES, PIPE_BYTES]
