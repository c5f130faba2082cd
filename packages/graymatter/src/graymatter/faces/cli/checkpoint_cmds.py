"""``graymatter checkpoint save|list|resume``: session checkpoints from the command line."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from graymatter.bounded import read_source
from graymatter.faces.cli.exit_codes import EXIT_OK
from graymatter.faces.cli.options import open_memory, require_known_agent
from graymatter.faces.cli.render import checkpoint_table, dump, emit_json, say

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory


def read_json_arg(value: str | None, what: str, limit: int) -> Any:
    """A JSON argument as given: the text itself, ``-`` for stdin or ``@FILE`` (read within ``limit``
    bytes); None when absent."""
    if value is None:
        return None
    if value == "-":
        return read_source("-", limit, what)
    if value.startswith("@"):
        return read_source(value[1:], limit, f"{what} file")
    return value


def cmd_checkpoint(args: argparse.Namespace) -> int:
    action = {"save": _save, "list": _list}.get(args.checkpoint_command, _resume)
    reads = args.checkpoint_command != "save"
    if not reads:  # bounded, before the store opens: a refusal creates nothing
        from graymatter.config import MemoryConfig

        limit = MemoryConfig.from_env().max_checkpoint_bytes
        args.state = read_json_arg(args.state, "state", limit)
        args.metadata = read_json_arg(args.metadata, "metadata", limit)
    with open_memory(args, existing=reads) as memory:
        if args.checkpoint_command == "list":  # resume keeps its own "no checkpoint" answer (exit 3)
            require_known_agent(memory, args.agent)
        action(args, memory)
    return EXIT_OK


def _save(args: argparse.Namespace, memory: Memory) -> None:
    state = args.state
    metadata_raw = args.metadata
    from graymatter.validation import json_object

    metadata = {"source": "cli"}
    if metadata_raw is not None:
        metadata.update(json_object(metadata_raw, "metadata", memory.config.max_checkpoint_bytes))
    cp = memory.checkpoint_save(args.agent, state, metadata=metadata, provenance={"interface": "cli"})
    if args.json:
        emit_json(dump(cp))
    else:
        say(args, f'Checkpoint "{cp.id}" saved for agent "{cp.agent_id}".')


def _list(args: argparse.Namespace, memory: Memory) -> None:
    cps = memory.checkpoint_list(args.agent, args.limit)
    if args.json:
        emit_json([c.model_dump(mode="json", exclude={"state", "messages"}) for c in cps])
    else:
        sys.stdout.write(checkpoint_table(cps))


def _resume(args: argparse.Namespace, memory: Memory) -> None:
    cp = memory.checkpoint_get(args.agent, args.id) if args.id else memory.checkpoint_latest(args.agent)
    if args.json:
        emit_json(dump(cp))
    else:
        sys.stdout.write(cp.model_dump_json(indent=2) + "\n")


def register(sub: Any, common: argparse.ArgumentParser, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``checkpoint`` and its three actions to the ``graymatter`` subparsers."""
    p = sub.add_parser("checkpoint", parents=[common], help="save, list or resume session checkpoints")
    cps = p.add_subparsers(dest="checkpoint_command", metavar="ACTION", parser_class=parser_class)
    cps.required = True
    save = cps.add_parser("save", parents=[common], help="save a checkpoint")
    save.add_argument("agent")
    save.add_argument("--state", help="a JSON object, @FILE or - for stdin (default {})")
    save.add_argument("--metadata", help='a JSON object, @FILE or - (merged over {"source": "cli"})')
    listing = cps.add_parser("list", parents=[common], help="list checkpoints, newest first")
    listing.add_argument("agent")
    listing.add_argument("--limit", type=int, default=None)
    resume = cps.add_parser("resume", parents=[common], help="print the latest (or the given) checkpoint")
    resume.add_argument("agent")
    resume.add_argument("id", nargs="?")
    for action in (save, listing, resume):
        action.set_defaults(func=cmd_checkpoint)
