"""The store-wide commands: consolidate, compact, stats, agents, export, import and demo."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from graymatter.errors import CliUsageError
from graymatter.faces.cli.exit_codes import EXIT_OK
from graymatter.faces.cli.options import open_memory, require_known_agent, resolve_data_dir
from graymatter.faces.cli.render import dump, emit_json, report, say, stats_line

EXPORT_NAMES = {"markdown": "graymatter.md", "json": "graymatter.json", "obsidian": "obsidian"}


def cmd_consolidate(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        require_known_agent(memory, args.agent)
        result = memory.consolidate(args.agent)
    line = f'Consolidated "{result.agent_id}": {result.decayed} decayed, {len(result.pruned)} pruned'
    if result.summary_fact_id:
        line += f", {len(result.consumed_ids)} summarised into {result.summary_fact_id}"
    if result.summariser_error:
        line += f" (summariser failed: {result.summariser_error})"
    report(args, result, line + ".")
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        result = memory.compact()
    line = (
        f"Compacted {result.store}: {_size(result.bytes_before)} -> {_size(result.bytes_after)} "
        f"({_size(result.bytes_returned)} returned)."
    )
    report(args, result, line)
    return EXIT_OK


def _size(count: int) -> str:
    """A byte count for people: ``812 B``, ``48.0 kB``, ``3.2 MB``, ``1.4 GB`` (powers of 1,000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def cmd_stats(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        if args.agent:
            require_known_agent(memory, args.agent)
        agents = [args.agent] if args.agent else memory.agents()
        stats = [memory.stats(a) for a in agents]
        embedding = memory.embedding_model or "keyword-only"
        location = memory.store.url
    if args.json:
        emit_json({"store": location, "embedding": embedding, "agents": dump(stats)})
        return EXIT_OK
    if not args.quiet:
        sys.stdout.write(f"store: {location}\nembedding: {embedding}\n")
    if not stats:
        say(args, "no agents yet")
    sys.stdout.write("".join(stats_line(s) for s in stats))
    return EXIT_OK


def cmd_agents(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        agents = memory.agents()
    if args.json:
        emit_json(agents)
    else:
        sys.stdout.write("".join(f"{a}\n" for a in agents))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from graymatter.engine.export import render_json, render_markdown, write_export

    with open_memory(args, existing=True) as memory:
        if args.agent:
            require_known_agent(memory, args.agent)
        bundle = memory.export(args.agent)
        base = memory.data_dir or Path(resolve_data_dir(args))
    if args.out == "-":
        if args.format == "obsidian":
            raise CliUsageError("--format obsidian writes a directory; pass --out DIR")
        sys.stdout.write(render_markdown(bundle) if args.format == "markdown" else render_json(bundle))
        return EXIT_OK
    default_name = EXPORT_NAMES[args.format]
    out = Path(args.out) if args.out else Path(base) / "export" / default_name
    if args.format != "obsidian" and out.is_dir():
        out = out / default_name
    written = write_export(bundle, args.format, out)
    if args.json:
        emit_json({"format": args.format, "out": str(out), "files": len(written), "facts": len(bundle.facts)})
    else:
        say(
            args,
            f"Exported {len(bundle.facts)} facts, {len(bundle.checkpoints)} checkpoints and "
            f"{len(bundle.links)} links to {out}.",
        )
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from graymatter.bounded import IMPORT_MAX_BYTES, read_source

    raw = read_source(args.file, IMPORT_MAX_BYTES, "import bundle")
    with open_memory(args) as memory:
        result = memory.import_bundle(raw)
    text = (
        f"Imported {result.facts_added} facts ({result.facts_skipped} already present), "
        f"{result.checkpoints_added} checkpoints, {result.links_added} links."
    )
    report(args, result, text)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from graymatter.faces.cli.demo import run_demo

    return run_demo(keep=args.keep, json_output=args.json)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the store-wide commands to the ``graymatter`` subparsers."""
    p = sub.add_parser("consolidate", parents=[common], help="run one decay/summarise/prune cycle now")
    p.add_argument("agent")
    p.set_defaults(func=cmd_consolidate)
    p = sub.add_parser(
        "compact",
        parents=[common],
        help="give free space back to the disk and merge the full-text index (after pruning, say)",
    )
    p.set_defaults(func=cmd_compact)
    p = sub.add_parser("stats", parents=[common], help="counts per agent")
    p.add_argument("agent", nargs="?")
    p.set_defaults(func=cmd_stats)
    p = sub.add_parser("agents", parents=[common], help="list agent ids")
    p.set_defaults(func=cmd_agents)
    p = sub.add_parser(
        "export", parents=[common], help="export facts (tombstones included), checkpoints, links"
    )
    p.add_argument("--format", choices=("markdown", "json", "obsidian"), default="markdown")
    p.add_argument(
        "--out",
        help="output file (directory for obsidian); '-' = stdout "
        "(default <dir>/export/graymatter.md|.json or <dir>/export/obsidian)",
    )
    p.add_argument("--agent", default=None, help="only this namespace")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser(
        "import", parents=[common], help="import a JSON export (ids already present are skipped)"
    )
    p.add_argument("file", help="path of a graymatter JSON export, or - for stdin")
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("demo", parents=[common], help="a guided tour on a temporary store (offline)")
    p.add_argument("--keep", metavar="DIR", default=None, help="build the demo store in DIR and keep it")
    p.set_defaults(func=cmd_demo)
