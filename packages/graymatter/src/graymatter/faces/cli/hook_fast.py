"""The hook fast path: ``graymatter hook CLIENT EVENT`` without the parser, served by the warm server if up.

Hooks run as a fresh process on every prompt, so this path imports no parser and, when the warm per-user
server of ``mcp serve`` is listening (ADR 0010), no engine either: the payload is read here (bounded),
and a forked child of the warm server, with everything imported, runs the ordinary in-process hook on
private in-memory files (``memfd``) holding the payload, stdout and stderr. The relay copies the child's
output to the client only once the child reported its exit, so a child that dies half-way prints nothing;
the relay then writes the hook-log line instead (exit 0, as for every hook failure). When no warm server
answers (absent, another code version, stale socket, ``GRAYMATTER_MCP_WARM=0``), the relay launches one
in the background (as ``mcp serve`` does) and the hook runs in this process on the bytes already read.
"""

from __future__ import annotations

import os
import sys

from graymatter.faces.cli.global_flags import split_global_flags
from graymatter.faces.cli.warm_commands import is_the_command, warm_enabled

HOOK_CLIENTS = ("claude-code", "codex", "gemini", "qwen")
"""The clients ``graymatter hook`` knows (the keys of ``faces.hooks.clients.CLIENTS``; a test checks)."""
HOOK_EVENTS = ("session-start", "user-prompt", "pre-compact", "session-end")
"""The hook events (``faces.hooks.clients.EVENTS``; a test checks)."""
PAYLOAD_LIMIT = 1024 * 1024
"""``faces.hooks.payload.MAX_PAYLOAD_BYTES`` (a test checks), here so that relaying imports no dataclass."""
_READ_CHUNK = 64 * 1024


def hook_words(argv: list[str]) -> tuple[str, str, bool, str | None] | None:
    """``(client, event, no_create, --dir)`` when ``argv`` is a hook command line, else None: the global
    flags lifted as ``grammar.lift_global_flags`` lifts them (a hypothesis test holds the two together),
    without importing the grammar (and with it ``dataclasses`` and ``difflib``) before relaying."""
    rest, values, _switches = split_global_flags(argv)
    no_create = "--no-create" in rest
    words = [word for word in rest if word != "--no-create"]
    if len(words) != 3 or words[0] != "hook" or words[1] not in HOOK_CLIENTS or words[2] not in HOOK_EVENTS:
        return None
    return words[1], words[2], no_create, values.get("--dir")


def run_hook_fast(argv: list[str], *, in_warm_child: bool = False) -> int | None:
    """Run ``hook CLIENT EVENT [--no-create]`` without building the whole parser (hooks run on every
    prompt, so the 30 ms the parser and its command modules cost matter); None for any other command line,
    which then goes through the parser (and its error messages) as usual. ``in_warm_child``: this process
    is a child of the warm server (it serves in-process, never relays again)."""
    words = hook_words(argv)
    if words is None:
        return None
    payload: bytes | None = None
    if not in_warm_child and is_the_command(argv):
        payload = _read_stdin()
        if payload is not None:
            code = _relay(argv, words, payload)
            if code is not None:
                return code
    # A hook is a short-lived process with a bounded payload and bounded work (the client kills it at
    # its timeout): the cyclic collector only costs it time (about 10 ms of the imports), never memory.
    import gc

    gc.disable()
    import argparse

    from graymatter.faces.cli.grammar import lift_global_flags
    from graymatter.faces.cli.hooks_cmds import cmd_hook

    flags, _rest = lift_global_flags(argv)
    client, event, no_create, _dir = words
    args = argparse.Namespace(client=client, event=event, no_create=no_create, warm=in_warm_child)
    flags.apply(args)
    return cmd_hook(args, payload)


def _read_stdin() -> bytes | None:
    """The payload as the in-process hook would read it (at most one byte over the bound); None when stdin
    is absent or a terminal (the hook then runs in-process, which treats that as an empty payload)."""
    chunks: list[bytes] = []
    try:
        if os.isatty(0):
            return None
        left = PAYLOAD_LIMIT + 1
        while left > 0:
            chunk = os.read(0, min(left, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None if not chunks else b"".join(chunks)
    return b"".join(chunks)


def _relay(argv: list[str], words: tuple[str, str, bool, str | None], payload: bytes) -> int | None:
    """Serve the hook through the warm server on in-memory stdio; its exit code (always 0 once a child
    took the hook), or None when no warm server took it (one was launched for the next hook)."""
    if not hasattr(os, "memfd_create") or not warm_enabled():
        return None
    files: list[int] = []
    saved: list[int] = []
    try:
        files = [os.memfd_create(f"gm-hook-{name}", os.MFD_CLOEXEC) for name in ("in", "out", "err")]
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        os.write(files[0], payload)
        os.lseek(files[0], 0, os.SEEK_SET)
    except OSError:  # no descriptors to spare, or stdio closed: in-process, as before the warm path
        _close(files + saved)
        return None
    try:
        code = _serve_warm_on(files, saved, argv)
        if code == 0:
            _copy(files[1], 1)
            _copy(files[2], 2)
        elif code is not None:
            _log_lost(words, payload)
        return None if code is None else 0
    finally:
        _close(files + saved)


def _serve_warm_on(files: list[int], saved: list[int], argv: list[str]) -> int | None:
    """``serve_warm(argv)`` with this process's stdio swapped for ``files`` (and put back afterwards)."""
    _flush_quietly()
    for target, fd in enumerate(files):
        os.dup2(fd, target, inheritable=True)
    try:
        from graymatter.faces.mcp_server.warm_relay import serve_warm

        return serve_warm(argv)
    except Exception:  # e.g. a source file vanished while the code key was computed: in-process
        return None
    finally:
        _flush_quietly()
        for target, fd in enumerate(saved):
            os.dup2(fd, target, inheritable=True)


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _copy(source: int, target: int) -> None:
    """Copy what the child wrote into ``source`` to the client's descriptor ``target`` (errors ignored:
    a client that closed its pipe gets nothing, as in-process)."""
    os.lseek(source, 0, os.SEEK_SET)
    try:
        while chunk := os.read(source, _READ_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]
    except OSError:
        pass


def _log_lost(words: tuple[str, str, bool, str | None], payload: bytes) -> None:
    """The warm child vanished before it reported: nothing is printed, one hook-log line says so."""
    from graymatter.faces.hooks.runtime import HookInvocation, WarmChildLost, log_failure

    client, event, no_create, directory = words
    invocation = HookInvocation(client, event, no_create=no_create, dir_override=directory)
    log_failure(invocation, payload, WarmChildLost("the warm server's child ended before it reported"))
