"""Project routing: the one rule for which project root, store directory and agent id a session gets.

The project root is the first of: ``$CLAUDE_PROJECT_DIR`` (then ``$GEMINI_PROJECT_DIR``,
``$QWEN_PROJECT_DIR``), which must name an existing absolute directory; else the git root above the hook
payload's ``cwd``, or that ``cwd`` itself; else the git root above the process cwd, or the cwd itself. The
store is ``<root>/.graymatter`` unless ``--dir`` or ``$GRAYMATTER_DIR`` names one (a relative one resolves
against the process cwd). The agent id is ``$GRAYMATTER_AGENT_ID`` or the override, else the root's name
normalised by :func:`normalise_agent_id`. Nothing here creates or opens anything.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from graymatter.constants import DATA_DIR_ENV, DEFAULT_DATA_DIR, SHARED_AGENT_ID
from graymatter.errors import InvalidInput
from graymatter.validation import agent_id as checked_agent_id

PROJECT_DIR_ENVS: Final = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "QWEN_PROJECT_DIR")
"""Environment variables a client sets to the project root, highest priority first."""

AGENT_ID_ENV: Final = "GRAYMATTER_AGENT_ID"
"""The environment variable that sets the agent id outright."""

MAX_ROUTED_AGENT_CHARS: Final = 64
"""The longest agent id derived from a directory name."""

MAX_WALK_DEPTH: Final = 256
"""The most parent directories examined while looking for a ``.git`` entry."""

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_EDGES = "._-"


@dataclass(frozen=True)
class ProjectRoute:
    """Where a session's memory lives: its project root, store directory and agent id, and why."""

    root: Path
    store_dir: Path
    agent_id: str
    source: str
    """Which rule chose the root: ``env:<NAME>``, ``payload-cwd``, ``git-root`` or ``cwd``."""
    store_source: str = "project"
    """Which rule chose the store: ``--dir``, ``env:GRAYMATTER_DIR`` or ``project``."""
    agent_source: str = "root-name"
    """Which rule chose the agent id: ``override``, ``env:GRAYMATTER_AGENT_ID`` or ``root-name``."""


def normalise_agent_id(name: str) -> str:
    """A directory name as an agent id: lowercase ASCII letters, digits, ``.``, ``_`` and ``-``, at most 64
    characters, starting and ending with a letter or digit; never the shared namespace. A name with nothing
    usable left becomes ``project-<8 hex digits of its hash>`` (distinct names stay distinct)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = _UNSAFE.sub("-", folded)
    slug = re.sub(r"-{2,}", "-", slug)[:MAX_ROUTED_AGENT_CHARS].strip(_EDGES)
    if not slug or slug == SHARED_AGENT_ID:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return f"project-{digest}"
    return slug


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds a ``.git`` entry (a directory, or the file of
    a worktree), without running git; ``None`` if there is none."""
    current = start
    for _ in range(MAX_WALK_DEPTH):
        if os.path.lexists(current / ".git"):
            return current
        parent = current.parent
        if parent == current:
            return None
        current = parent
    return None


def _env_root(env: Mapping[str, str]) -> tuple[Path, str] | None:
    for name in PROJECT_DIR_ENVS:
        value = env.get(name, "")
        if not value.strip():
            continue
        path = Path(value)
        if not path.is_absolute() or not path.is_dir():
            raise InvalidInput(f"{name} must name an existing absolute directory")
        return Path(os.path.normpath(path)), f"env:{name}"
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _project_root(env: Mapping[str, str], payload_cwd: str | Path | None, cwd: Path) -> tuple[Path, str]:
    payload = None
    if payload_cwd is not None and str(payload_cwd).strip():
        payload = Path(os.path.normpath(cwd / Path(payload_cwd)))
    chosen = _env_root(env)
    if chosen is not None:
        if payload is not None and not _inside(payload, chosen[0]):
            raise InvalidInput(f"the session's cwd is outside the project named by ${chosen[1][4:]}")
        return chosen
    if payload is not None and payload.is_dir():
        git = find_git_root(payload)
        return (git, "git-root") if git is not None else (payload, "payload-cwd")
    git = find_git_root(cwd)
    return (git, "git-root") if git is not None else (cwd, "cwd")


def resolve_route(
    *,
    env: Mapping[str, str] | None = None,
    payload_cwd: str | Path | None = None,
    cwd: str | Path | None = None,
    dir_override: str | Path | None = None,
    agent_override: str | None = None,
) -> ProjectRoute:
    """Apply the routing rule (module docstring) to ``env`` (default ``os.environ``), the hook payload's
    ``cwd``, the process ``cwd`` (default ``os.getcwd()``) and the ``--dir`` / agent overrides."""
    env = os.environ if env is None else env
    here = Path(os.path.normpath(Path(os.getcwd() if cwd is None else cwd).absolute()))
    root, source = _project_root(env, payload_cwd, here)
    if dir_override is not None and str(dir_override).strip():
        store_dir, store_source = here / Path(dir_override), "--dir"
    elif env.get(DATA_DIR_ENV, "").strip():
        store_dir, store_source = here / Path(env[DATA_DIR_ENV]), f"env:{DATA_DIR_ENV}"
    else:
        store_dir, store_source = root / DEFAULT_DATA_DIR, "project"
    if agent_override is not None:
        agent, agent_source = checked_agent_id(agent_override), "override"
    elif env.get(AGENT_ID_ENV, "").strip():
        agent, agent_source = checked_agent_id(env[AGENT_ID_ENV]), f"env:{AGENT_ID_ENV}"
    else:
        agent, agent_source = normalise_agent_id(root.name), "root-name"
    return ProjectRoute(
        root=root,
        store_dir=Path(os.path.normpath(store_dir)),
        agent_id=agent,
        source=source,
        store_source=store_source,
        agent_source=agent_source,
    )
