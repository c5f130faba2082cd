"""The warm server of one benchmark run (ADR 0010), in a private socket directory: launched, then ended."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


class WarmServer:
    """The warm server of this run, in a private socket directory (``XDG_RUNTIME_DIR``)."""

    def __init__(self, runtime: Path, env: dict[str, str]) -> None:
        self.runtime, self.env = runtime, env
        self.launches = 0
        self._launched: list[subprocess.Popen[bytes]] = []  # kept, so no sample's wait reaps one

    def socket_path(self) -> Path:
        from graymatter.faces.mcp_server.warm_paths import code_fingerprint, package_dir, socket_path

        path = socket_path(self.runtime / "graymatter", code_fingerprint(package_dir()))
        assert path is not None, "socket path too long"
        return path

    def pid(self) -> int | None:
        """The pid of the warm server listening for the code as it is now, else None."""
        sock = self.socket_path()
        lock = sock.with_suffix(".lock")
        text = lock.read_text().strip() if lock.exists() else ""
        if not text.isdigit() or not alive(int(text)) or not connects(sock):
            return None
        return int(text)

    def ensure(self) -> None:
        """Return once a warm server listens for the current code (launched here if none does); the key
        follows every source file, so while files change one may retire and another one start."""
        from graymatter.faces.mcp_server.warm_relay import WARM_SERVER_CODE

        deadline, launched = time.monotonic() + 120, ""
        while self.pid() is None:
            if time.monotonic() > deadline:
                raise RuntimeError("no warm server came up")
            key = self.socket_path().name
            if launched != key:
                subprocess.Popen(
                    [sys.executable, "-c", WARM_SERVER_CODE], env=self.env, start_new_session=True
                )
                launched, self.launches = key, self.launches + 1
            time.sleep(0.05)

    def stop(self) -> None:
        """End every warm server of this run (SIGTERM by the pid in each lock file) and wait for them."""
        pids = []
        for lock in (self.runtime / "graymatter").glob("mcp-*.lock"):
            text = lock.read_text().strip()
            if text.isdigit() and alive(int(text)):
                os.kill(int(text), signal.SIGTERM)
                pids.append(int(text))
        deadline = time.monotonic() + 30
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        for process in self._launched:
            if process.poll() is None and process.pid not in pids:
                continue  # still listening for other code: it retires by itself
            process.wait(timeout=30)
        self._launched = [p for p in self._launched if p.returncode is None]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def connects(path: Path) -> bool:
    """Whether something accepts connections on the warm server's socket at ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
