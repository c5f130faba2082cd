"""The warm MCP server: one pre-imported process per user and code version that forks a server per client.

Started in the background by the first ``graymatter mcp serve`` that finds none (see
:mod:`graymatter.faces.mcp_server.warm_relay`). It imports the MCP SDK and the engine once, then waits on
its private socket. For each relay it checks the peer's uid, receives the relay's argv, environment and
stdio descriptors, and forks: the child takes over the descriptors, working directory, umask and
environment of the relay and runs the ordinary in-process command, so every session still has its own
process and its own store connection. The parent never opens a store and runs no thread, which keeps
``fork`` safe.

It exits when no client came for the idle timeout, when its socket was removed or replaced, or when the
graymatter source changed under it. A second warm server for the same key exits at once (a lock file).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from graymatter.faces.mcp_server.warm_paths import (
    MAX_HEADER_BYTES,
    code_fingerprint,
    decode_header,
    idle_seconds,
    package_dir,
    socket_dir,
    socket_path,
)

Serve = Callable[[list[str]], int]
"""Runs one ``mcp serve`` in-process with the given argv; returns its exit code."""
GO_TIMEOUT_S = 10.0
_TICK_S = 1.0
_PARENT_ONLY: list[int] = []  # descriptors a forked child closes first (the lock file)


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _watch_relay(conn: socket.socket) -> None:
    """End this child when its relay goes away (the client killed or closed it)."""

    def wait() -> None:
        try:
            conn.recv(1)
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="graymatter-relay-watch", daemon=True).start()


def _adopt(header: dict[str, object], fds: list[int]) -> None:
    """Become the relay's process: its stdio, working directory, umask and environment."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    env = header["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(header["cwd"]))
    umask = header["umask"]
    assert isinstance(umask, int)
    os.umask(umask)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _child(conn: socket.socket, header: dict[str, object], fds: list[int], serve: Serve) -> int:
    """The forked child's whole life: handshake, adopt the relay's process state, serve, report."""
    conn.settimeout(GO_TIMEOUT_S)
    conn.sendall(b"ready")
    if conn.recv(8) != b"go":
        return 0  # the relay gave up on us and serves in-process; stdin was never touched
    conn.settimeout(None)
    _adopt(header, fds)
    _watch_relay(conn)
    argv = header["argv"]
    assert isinstance(argv, list)
    sys.argv = ["graymatter", *argv]
    code = serve(argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    conn.sendall(f"exit {code}".encode())
    return code


def _serve_connection(conn: socket.socket, listener: socket.socket, key: str, serve: Serve) -> None:
    """Receive one relay's request and fork its server; the parent keeps nothing of it.

    The child closes the listener and the lock (a live session must not keep a new warm server out).
    """
    fds: list[int] = []
    try:
        if _peer_uid(conn) != os.getuid():
            return
        conn.settimeout(GO_TIMEOUT_S)
        data, fds, _flags, _addr = socket.recv_fds(conn, MAX_HEADER_BYTES + 1, 3)
        header = decode_header(data, key)
        if header is None or len(fds) != 3:
            return
        if os.fork() == 0:
            listener.close()
            for fd in _PARENT_ONLY:
                os.close(fd)
            code = 1
            try:
                code = _child(conn, header, fds, serve)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
    except OSError:
        return
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


def _single_threaded(wait_s: float = 5.0) -> bool:
    """Whether only the main thread is left (threads the preload started get ``wait_s`` to finish)."""
    deadline = time.monotonic() + wait_s
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return threading.active_count() == 1


def _still_ours(path: Path, inode: int) -> bool:
    try:
        return os.lstat(path).st_ino == inode
    except OSError:
        return False


def _lock(directory: Path, key: str) -> int | None:
    """Hold the key's lock file for the life of this process; None if another warm server holds it."""
    import fcntl

    fd = os.open(directory / f"mcp-{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())  # who holds the lock, for operators and tests
    return fd


def _listen(path: Path) -> socket.socket:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    old = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    finally:
        os.umask(old)
    listener.listen(64)
    listener.settimeout(_TICK_S)
    return listener


def _loop(listener: socket.socket, path: Path, key: str, serve: Serve) -> None:
    """Accept relays until idle, until the socket is no longer ours, or until the code changed."""
    inode = os.lstat(path).st_ino
    idle, last = idle_seconds(), time.monotonic()
    while _still_ours(path, inode) and time.monotonic() - last < idle:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if code_fingerprint(package_dir()) != key:
                break
            continue
        last = time.monotonic()
        _serve_connection(conn, listener, key, serve)
    if _still_ours(path, inode):
        os.unlink(path)  # new relays now start a fresh server; drain those already queued
    listener.settimeout(0)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            break
        _serve_connection(conn, listener, key, serve)


def run(serve: Serve, preload: Callable[[], None]) -> int:
    """The warm server's main: lock, preload, listen, loop. Returns 0 (also when another one runs)."""
    directory = socket_dir()
    key = code_fingerprint(package_dir())
    path = None if directory is None else socket_path(directory, key)
    if directory is None or path is None:
        return 0
    lock = _lock(directory, key)
    if lock is None:
        return 0
    _PARENT_ONLY.append(lock)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    preload()
    if not _single_threaded():
        return 0  # forking a process with other threads is unsafe: every client serves in-process instead
    listener = _listen(path)
    with listener:
        _loop(listener, path, key, serve)
    os.close(lock)
    return 0
