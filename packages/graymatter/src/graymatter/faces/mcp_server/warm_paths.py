"""Where the warm MCP server listens and who may use it: a private socket directory and a code-bound key.

Standard library only (this is on the start-up path of ``graymatter mcp serve``). The socket lives in
``$XDG_RUNTIME_DIR/graymatter`` or else ``${TMPDIR:-/tmp}/graymatter-<uid>``, a 0700 directory that must be
owned by the current user and not be a symlink; anything else disables the warm path. The socket name
carries a key derived from the interpreter, its text encodings, the graymatter version and the size and
modification time of every graymatter source file, so a client never reaches a warm server running other
code or writing another encoding.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

WARM_ENV = "GRAYMATTER_MCP_WARM"
"""``0`` turns the warm server off (every ``mcp serve`` then serves in its own process)."""
IDLE_ENV = "GRAYMATTER_MCP_WARM_IDLE"
"""Seconds the warm server waits for a new client before it exits (default :data:`DEFAULT_IDLE_S`)."""
DEFAULT_IDLE_S = 600.0
MAX_HEADER_BYTES = 64 * 1024
"""Upper bound of the relay's request (argv, working directory, environment); larger means in-process."""
_MAX_SOCKET_PATH = 100  # sockaddr_un holds 108 bytes


def warm_enabled(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether ``mcp serve`` may use (and start) the warm server."""
    value = (os.environ if environ is None else environ).get(WARM_ENV, "1").strip().lower()
    return value not in {"0", "false", "no", "off"}


def idle_seconds() -> float:
    """The idle timeout from :data:`IDLE_ENV`, or the default when unset or not a positive number."""
    try:
        value = float(os.environ.get(IDLE_ENV, ""))
    except ValueError:
        return DEFAULT_IDLE_S
    return value if 0 < value < 86400 else DEFAULT_IDLE_S


def _private_dir(path: Path) -> bool:
    """Create ``path`` 0700 if missing; True only if it is a real directory, ours, closed to others."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def socket_dir() -> Path | None:
    """The private directory of the warm server's socket, or None when no safe one is available."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        base = Path(runtime) / "graymatter"
    else:
        tmp = os.environ.get("TMPDIR") or "/tmp"
        base = Path(tmp if os.path.isabs(tmp) else "/tmp") / f"graymatter-{os.getuid()}"
    return base if _private_dir(base) else None


def code_fingerprint(package_dir: Path) -> str:
    """A digest of the interpreter, version and every source file's path, size and mtime under graymatter,
    and of the text encodings this interpreter started with (a child writes through the warm server's
    streams, so a caller with another ``PYTHONIOENCODING`` or locale gets a warm server of its own)."""
    from graymatter import __version__

    streams = [
        (getattr(s, "encoding", None), getattr(s, "errors", None)) for s in (sys.__stdout__, sys.__stderr__)
    ]
    started = [sys.executable, sys.version, __version__, sys.flags.utf8_mode, sys.getfilesystemencoding()]
    digest = hashlib.sha256(json.dumps([*started, streams]).encode())
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def package_dir() -> Path:
    """The installed graymatter package directory."""
    import graymatter

    return Path(graymatter.__file__).parent


def socket_path(directory: Path, key: str) -> Path | None:
    """The socket for ``key`` in ``directory``, or None if the path is too long for a Unix socket."""
    path = directory / f"mcp-{key}.sock"
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else None


def encode_header(key: str, argv: list[str]) -> bytes | None:
    """The relay's request: key, argv, working directory, umask and environment, as one JSON message."""
    umask = os.umask(0)
    os.umask(umask)
    header = {"key": key, "argv": argv, "cwd": os.getcwd(), "umask": umask, "env": dict(os.environ)}
    data = json.dumps(header).encode()
    return data if len(data) <= MAX_HEADER_BYTES else None


def decode_header(data: bytes, key: str) -> dict[str, object] | None:
    """A relay's request if it is well formed and names ``key``; None otherwise."""
    try:
        header = json.loads(data)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("key") != key:
        return None
    argv, env = header.get("argv"), header.get("env")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        return None
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        return None
    if not isinstance(header.get("cwd"), str) or not isinstance(header.get("umask"), int):
        return None
    return header
