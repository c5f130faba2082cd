"""Per-session dedupe: a block identical to one already injected in the session is not injected again.

The state is ``<store>/hooks-state.json`` (0600, replaced atomically by a rename): for each of the newest
``MAX_SESSIONS`` sessions, the SHA-256 of at most ``MAX_BLOCKS_PER_SESSION`` injected blocks. A file that is
missing, too large or unreadable counts as empty: dedupe is an optimisation, never a reason to fail. So the
file is not fsynced (two syncs per injected prompt, 0.3-10 ms each on a busy disk): after a power loss it
may be older or empty, which costs at most one block injected again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Final

STATE_FILENAME: Final = "hooks-state.json"
MAX_SESSIONS: Final = 32
MAX_BLOCKS_PER_SESSION: Final = 64
MAX_STATE_BYTES: Final = 256 * 1024
"""A state file larger than this is ignored (and replaced on the next write)."""


def block_digest(text: str) -> str:
    """The digest a block is remembered by."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class SessionState:
    """The dedupe state of one store directory."""

    def __init__(self, store_dir: Path) -> None:
        self.path = store_dir / STATE_FILENAME
        self._sessions: dict[str, dict[str, object]] = self._load()

    def _load(self) -> dict[str, dict[str, object]]:
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(MAX_STATE_BYTES + 1)
            data = json.loads(raw) if len(raw) <= MAX_STATE_BYTES else {}
        except (OSError, ValueError, RecursionError):
            return {}
        sessions = data.get("sessions") if isinstance(data, dict) else None
        if not isinstance(sessions, dict):
            return {}
        return {
            sid: entry
            for sid, entry in sessions.items()
            if isinstance(sid, str) and isinstance(entry, dict) and isinstance(entry.get("seen"), list)
        }

    def seen(self, session_id: str, digest: str) -> bool:
        """True when the session already received the block with ``digest``."""
        entry = self._sessions.get(session_id)
        return entry is not None and digest in entry["seen"]  # type: ignore[operator]

    def record(self, session_id: str, digest: str) -> None:
        """Remember that the session received ``digest`` (and drop the oldest sessions and blocks)."""
        entry = self._sessions.pop(session_id, None) or {"seen": []}
        seen = [d for d in entry["seen"] if isinstance(d, str)][-(MAX_BLOCKS_PER_SESSION - 1) :]  # type: ignore[attr-defined]
        self._sessions[session_id] = {"seen": [*seen, digest], "at": round(time.time(), 3)}
        self._trim_and_save()

    def reset(self, session_id: str) -> None:
        """Forget what the session received (its context was cleared or compacted)."""
        if self._sessions.pop(session_id, None) is not None:
            self._trim_and_save()

    def _trim_and_save(self) -> None:
        newest = list(self._sessions.items())[-MAX_SESSIONS:]
        self._sessions = dict(newest)
        data = json.dumps({"version": 1, "sessions": self._sessions}, separators=(",", ":"))
        replace_file(self.path, data.encode("utf-8"))


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a fresh 0600 temporary file beside ``path`` (O_EXCL, O_NOFOLLOW) and rename it
    over ``path``: readers see the old or the new file, never a part; nothing is fsynced."""
    tmp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
