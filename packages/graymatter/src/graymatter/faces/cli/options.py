"""What the global options select: the data directory, the store location and the opened Memory."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from graymatter.constants import DATA_DIR_ENV

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory


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


def open_memory(args: argparse.Namespace) -> Memory:
    """Open the ``Memory`` the user selected with ``--store`` / ``--dir`` / the environment."""
    from graymatter.engine.memory import Memory
    from graymatter.store import open_store

    memory = Memory(store=open_store(resolve_store_location(args)))
    # A short-lived command waits briefly for a consolidation it triggered; an unfinished cycle is safe to
    # abandon (every step is its own transaction) and the next trigger runs it again.
    memory.close_timeout_s = 5.0
    return memory
