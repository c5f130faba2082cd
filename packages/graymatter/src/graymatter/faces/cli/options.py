"""What the global options select: the data directory, the store location and the opened Memory.

Commands that only read (or that act on facts that must already exist) open the store with
``existing=True``: a store that is not there is an error with a hint, never silently created, and an agent
id the store has never seen is reported as unknown instead of looking like lost memory.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from graymatter.constants import DATA_DIR_ENV, DEFAULT_DATA_DIR, SHARED_AGENT_ID

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

KNOWN_AGENTS_SHOWN = 8
"""How many known agent ids an "unknown agent" error names."""


def resolve_data_dir(args: argparse.Namespace) -> str:
    """``--dir``, else ``$GRAYMATTER_DIR``, else the routed project's ``<root>/.graymatter``
    (:mod:`graymatter.routing`)."""
    explicit = getattr(args, "dir", None) or os.environ.get(DATA_DIR_ENV)
    if explicit:
        return str(explicit)
    from graymatter.routing import resolve_route

    return str(resolve_route().store_dir)


def resolve_store_location(args: argparse.Namespace) -> str:
    """``--store URL``, else ``$GRAYMATTER_DATABASE_URL``, else the data directory."""
    return getattr(args, "store", None) or os.environ.get("GRAYMATTER_DATABASE_URL") or resolve_data_dir(args)


def open_memory(args: argparse.Namespace, *, existing: bool = False) -> Memory:
    """Open the ``Memory`` the user selected with ``--store`` / ``--dir`` / the environment.

    With ``existing`` a local store that does not exist raises ``StoreNotFound`` and nothing is created.
    """
    from graymatter.engine.memory import Memory
    from graymatter.store import open_store

    location = resolve_store_location(args)
    if existing:
        require_existing_store(location)
    memory = Memory(store=open_store(location))
    # A short-lived command waits briefly for a consolidation it triggered; an unfinished cycle is safe to
    # abandon (every step is its own transaction) and the next trigger runs it again.
    memory.close_timeout_s = 5.0
    return memory


def require_existing_store(location: str) -> None:
    """Raise ``StoreNotFound`` (one line, with a hint) unless the local store at ``location`` exists.

    PostgreSQL URLs are not checked here: the server reports a missing database itself.
    """
    from graymatter.errors import StoreNotFound
    from graymatter.store.sqlite.schema import DB_FILENAME

    if "://" in location and not location.startswith("sqlite://"):
        return  # PostgreSQL, or a scheme open_store refuses with its own message
    directory = Path(location[len("sqlite://") :] if location.startswith("sqlite://") else location)
    if (directory / DB_FILENAME).is_file():
        return
    shown = directory.expanduser().absolute()
    hint = f'create it with `graymatter --dir {shown} remember AGENT "TEXT"`'
    nearest = nearest_store(Path.cwd())
    if nearest is not None and nearest != shown:
        hint = f"the nearest existing store is {nearest} (pass --dir {nearest}), or {hint}"
    raise StoreNotFound(f"no graymatter store at {shown} (nothing was created); {hint}")


def nearest_store(start: Path) -> Path | None:
    """The closest ``.graymatter`` store in ``start`` or a parent directory, else ``$GRAYMATTER_DIR``'s."""
    from graymatter.store.sqlite.schema import DB_FILENAME

    for folder in (start.absolute(), *start.absolute().parents):
        candidate = folder / DEFAULT_DATA_DIR
        if (candidate / DB_FILENAME).is_file():
            return candidate
    env_dir = os.environ.get(DATA_DIR_ENV)
    if env_dir and (Path(env_dir) / DB_FILENAME).is_file():
        return Path(env_dir).absolute()
    return None


def require_known_agent(memory: Memory, agent_id: str) -> None:
    """Raise ``UnknownAgent`` naming the known agents when ``agent_id`` has nothing in the store."""
    from graymatter.errors import UnknownAgent
    from graymatter.validation import agent_id as valid_agent_id

    agent_id = valid_agent_id(agent_id)  # an invalid id is invalid input (exit 2), not an unknown agent
    if agent_id == SHARED_AGENT_ID:
        return
    known = memory.agents()
    if agent_id in known:
        return
    listed = [a for a in known if a != SHARED_AGENT_ID]
    if not listed:
        raise UnknownAgent(f'unknown agent "{agent_id}": this store has no agents yet')
    import difflib

    near = difflib.get_close_matches(agent_id, listed, n=1, cutoff=0.6)
    if near:
        raise UnknownAgent(f'unknown agent "{agent_id}" (did you mean "{near[0]}"?)')
    shown = ", ".join(listed[:KNOWN_AGENTS_SHOWN])
    extra = len(listed) - KNOWN_AGENTS_SHOWN
    more = f" and {extra} more (`graymatter agents`)" if extra > 0 else ""
    raise UnknownAgent(f'unknown agent "{agent_id}"; known agents: {shown}{more}')
