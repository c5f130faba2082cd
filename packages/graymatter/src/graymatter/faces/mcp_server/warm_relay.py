"""The client side of the warm MCP server: hand this process's stdio to a pre-imported server, or say no.

Standard library only. ``graymatter mcp serve`` calls :func:`serve_warm` first. It connects to the warm
server's private socket, sends its argv, working directory, umask and environment together with its
stdin, stdout and stderr descriptors (``SCM_RIGHTS``), and waits while a forked child of the warm server
serves MCP directly on those descriptors; then it exits with the child's exit code. No byte passes through
this process, so the wire is exactly the in-process one.

When no warm server answers (absent, crashed, other code, unsafe socket directory), :func:`serve_warm`
starts one in the background for the next client and returns None: the caller serves in-process. A
two-step handshake (the child says ``ready``, the relay says ``go``) guarantees the child never touches
stdin unless the relay committed to it, so a fallback never loses a byte.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from graymatter.faces.mcp_server.warm_paths import (
    code_fingerprint,
    encode_header,
    package_dir,
    socket_dir,
    socket_path,
    warm_enabled,
)

READY_TIMEOUT_S = 5.0
"""How long the relay waits for a forked child to report ready before it serves in-process instead."""
WARM_SERVER_CODE = "from graymatter.faces.cli.mcp_cmds import run_warm_server; run_warm_server()"
"""What ``python -c`` runs to start the warm server."""


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(os.fspath(path))
    except OSError:
        sock.close()
        return None
    return sock


def _owned_by_us(path: Path) -> bool:
    try:
        return os.lstat(path).st_uid == os.getuid()
    except OSError:
        return False


def _handshake(sock: socket.socket, header: bytes) -> bool:
    """Send the request and the three descriptors; True once the child is ready and told to go."""
    try:
        socket.send_fds(sock, [header], [0, 1, 2])
        sock.settimeout(READY_TIMEOUT_S)
        if sock.recv(16) != b"ready":
            return False
        sock.settimeout(None)
        sock.sendall(b"go")
    except OSError:
        return False
    return True


def _await_exit(sock: socket.socket) -> int:
    """Block until the child reports its exit code; 1 (with one stderr line) if it vanished instead."""
    try:
        reply = sock.recv(64)
    except OSError:
        reply = b""
    if reply.startswith(b"exit "):
        try:
            return int(reply[5:])
        except ValueError:
            pass
    sys.stderr.write("graymatter: error: the warm MCP server process ended unexpectedly\n")
    return 1


def start_warm_server() -> None:
    """Launch the warm server in its own session, detached from this client; errors are ignored."""
    import subprocess

    try:
        subprocess.Popen(
            [sys.executable, "-c", WARM_SERVER_CODE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass


def serve_warm(argv: list[str]) -> int | None:
    """Serve this ``mcp serve`` through the warm server; its exit code, or None to serve in-process."""
    if not warm_enabled():
        return None
    directory = socket_dir()
    key = code_fingerprint(package_dir())
    path = None if directory is None else socket_path(directory, key)
    header = encode_header(key, argv)
    if path is None or header is None:
        return None
    sock = _connect(path) if _owned_by_us(path) else None
    if sock is None:
        start_warm_server()
        return None
    with sock:
        if not _handshake(sock, header):
            return None
        return _await_exit(sock)
