"""The ``graymatter`` command line.

Only the standard library is imported at module level; the engine loads inside each command, so short
commands start fast. Other modules add subcommands through ``register(subparsers)`` (see
``EXTENSION_MODULES``); their handlers receive ``args`` and may call :func:`open_memory`.

Exit codes: 0 success, 1 storage or provider failure, 2 invalid input or usage, 3 not found
(including "no checkpoint").
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

EXTENSION_MODULES = ("graymatter.faces.cli.mcp_cmds", "graymatter.faces.cli.server_cmds")
SHARED = "__shared__"
EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NOT_FOUND = 0, 1, 2, 3


class CliUsageError(Exception):
    """A command-line usage error (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (and JSON with --json) instead of usage + exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliUsageError(f"{message} (see: {self.prog} --help)")


def resolve_data_dir(args: argparse.Namespace) -> str:
    """``--dir``, else ``$GRAYMATTER_DIR``, else ``./.graymatter``."""
    return getattr(args, "dir", None) or os.environ.get("GRAYMATTER_DIR") or ".graymatter"


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


# -- output helpers --------------------------------------------------------------------------------
def _emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, sort_keys=False) + "\n")


def _dump(model: Any) -> Any:
    if isinstance(model, list):
        return [_dump(m) for m in model]
    return model.model_dump(mode="json")


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        sys.stdout.write(text + "\n")


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- commands --------------------------------------------------------------------------------------
def _cmd_remember(args: argparse.Namespace) -> int:
    words = args.words
    if args.shared:
        if len(words) not in (1, 2):
            raise CliUsageError("remember --shared takes TEXT (an agent id before it is ignored)")
        agent, text = SHARED, words[-1]
    else:
        if len(words) != 2:
            raise CliUsageError("remember takes AGENT TEXT (or --shared TEXT)")
        agent, text = words
    if text == "-":
        text = sys.stdin.read()
    with open_memory(args) as memory:
        fact = memory.remember(agent, text, confidence=args.confidence, provenance={"interface": "cli"})
    if args.json:
        _emit_json(_dump(fact))
    else:
        _say(args, f'Stored fact {fact.id} for agent "{fact.agent_id}".')
    return EXIT_OK


def _cmd_recall(args: argparse.Namespace) -> int:
    scope = "shared" if args.shared else "all" if args.all else "agent"
    options: dict[str, Any] = {"scope": scope}
    for name in ("min_confidence", "confidence_weight", "min_relevance"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    with open_memory(args) as memory:
        if args.explain:
            results: list[Any] = memory.recall_explain(args.agent, args.query, args.top_k, **options)
        else:
            results = memory.recall(args.agent, args.query, args.top_k, **options)
    if args.json:
        _emit_json(_dump(results))
        return EXIT_OK
    label = {"agent": f"agent {args.agent}", "shared": SHARED, "all": f"agent {args.agent} + {SHARED}"}[scope]
    lines = [f"# Memory context [{label}] / {json.dumps(args.query, ensure_ascii=False)}"]
    if not results:
        lines.append("No memories found.")
    for i, hit in enumerate(results, 1):
        owner = f" [{hit.agent_id}]" if scope == "all" else ""
        lines.append(f"{i}. {_one_line(hit.text, 500)}{owner}")
        if args.explain:
            r = hit.ranks
            ranks = ", ".join(
                f"{name} {rank if rank else '-'}"
                for name, rank in (
                    ("keyword", r.keyword_rank),
                    ("vector", r.vector_rank),
                    ("recency", r.recency_rank),
                )
            )
            if hit.keyword_source in ("context", "phrase"):
                note = (
                    "phrase" if hit.keyword_source == "phrase" else f"context of {hit.keyword_context_from}"
                )
                ranks = ranks.replace(f"keyword {r.keyword_rank}", f"keyword {r.keyword_rank} ({note})", 1)
            lines.append(
                f"   id {hit.id} | ranks: {ranks} | fused {r.fused_score:.6f} (k={r.k}) | "
                f"score {hit.score:.6f} | {hit.confidence}{', pinned' if hit.pinned else ''}"
            )
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _cmd_revise(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        revision = memory.revise(
            args.agent, args.old, args.new, confidence=args.confidence, provenance={"interface": "cli"}
        )
    if args.json:
        _emit_json(_dump(revision))
    else:
        _say(args, f"Stored {revision.fact.id}; superseded {', '.join(revision.superseded_ids)}.")
    return EXIT_OK


def _cmd_target(action: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        with open_memory(args) as memory:
            ids = getattr(memory, action)(args.agent, args.text)
        if args.json:
            _emit_json({"action": action, "agent_id": args.agent, "fact_ids": ids})
        else:
            verb = {"forget": "Retired", "pin": "Pinned", "unpin": "Unpinned"}[action]
            _say(args, f"{verb} {len(ids)} fact(s): {', '.join(ids)}.")
        return EXIT_OK

    return run


def _cmd_alias(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        if args.list:
            if args.term is not None:
                raise CliUsageError("alias --list takes only AGENT")
            aliases = memory.aliases(args.agent)
            if args.json:
                _emit_json(_dump(aliases))
            else:
                for alias in aliases:
                    sys.stdout.write(f"{alias.text} = {', '.join(alias.equivalents)}  ({alias.id})\n")
                if not aliases:
                    _say(args, "No aliases.")
            return EXIT_OK
        if args.term is None or not args.equivalents:
            raise CliUsageError("alias takes AGENT TERM EQUIVALENT [EQUIVALENT ...] (or AGENT --list)")
        fact = memory.alias(args.agent, args.term, args.equivalents, provenance={"interface": "cli"})
    if args.json:
        _emit_json(_dump(fact))
    else:
        _say(args, f"Alias {fact.id}: {fact.text} = {', '.join(fact.equivalents)}.")
    return EXIT_OK


def _cmd_link(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        link = memory.link(
            args.agent, args.source, args.target, args.relation, provenance={"interface": "cli"}
        )
    if args.json:
        _emit_json(_dump(link))
    else:
        _say(args, f'Linked "{link.source}" -> "{link.target}" ({link.relation}).')
    return EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        facts = memory.list(args.agent, include_superseded=not args.live, include_aliases=args.aliases)
    if args.json:
        _emit_json(_dump(facts))
        return EXIT_OK
    for fact in facts:
        flags = [fact.confidence] + (["pinned"] if fact.pinned else [])
        if fact.superseded_by:
            flags.append(f"superseded by {fact.superseded_by}")
        if fact.kind == "alias":
            flags.append("alias")
        sys.stdout.write(f"{fact.id}  {_one_line(fact.text, 120)}  ({', '.join(flags)})\n")
    if not facts:
        _say(args, "No facts.")
    return EXIT_OK


def _read_json_arg(value: str | None, what: str) -> Any:
    if value is None:
        return None
    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise CliUsageError(f"cannot read {what} file {value[1:]}: {exc.strerror or exc}") from None
    return value


def _cmd_checkpoint(args: argparse.Namespace) -> int:
    action = args.checkpoint_command
    with open_memory(args) as memory:
        if action == "save":
            state = _read_json_arg(args.state, "state")
            metadata_raw = _read_json_arg(args.metadata, "metadata")
            from graymatter.validation import json_object

            metadata = {"source": "cli"}
            if metadata_raw is not None:
                metadata.update(json_object(metadata_raw, "metadata", memory.config.max_checkpoint_bytes))
            cp = memory.checkpoint_save(args.agent, state, metadata=metadata, provenance={"interface": "cli"})
            if args.json:
                _emit_json(_dump(cp))
            else:
                _say(args, f'Checkpoint "{cp.id}" saved for agent "{cp.agent_id}".')
        elif action == "list":
            cps = memory.checkpoint_list(args.agent, args.limit)
            if args.json:
                _emit_json([c.model_dump(mode="json", exclude={"state", "messages"}) for c in cps])
            else:
                sys.stdout.write(f"{'ID':<26}  {'CREATED':<32}  MESSAGES\n")
                for c in cps:
                    sys.stdout.write(f"{c.id:<26}  {c.created_at.isoformat():<32}  {c.message_count}\n")
        else:
            cp = (
                memory.checkpoint_get(args.agent, args.id)
                if args.id
                else memory.checkpoint_latest(args.agent)
            )
            if args.json:
                _emit_json(_dump(cp))
            else:
                sys.stdout.write(cp.model_dump_json(indent=2) + "\n")
    return EXIT_OK


def _cmd_consolidate(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        report = memory.consolidate(args.agent)
    if args.json:
        _emit_json(_dump(report))
    else:
        line = f'Consolidated "{report.agent_id}": {report.decayed} decayed, {len(report.pruned)} pruned'
        if report.summary_fact_id:
            line += f", {len(report.consumed_ids)} summarised into {report.summary_fact_id}"
        if report.summariser_error:
            line += f" (summariser failed: {report.summariser_error})"
        _say(args, line + ".")
    return EXIT_OK


def _cmd_stats(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        agents = [args.agent] if args.agent else memory.agents()
        stats = [memory.stats(a) for a in agents]
        embedding = memory.embedding_model or "keyword-only"
        location = memory.store.url
    if args.json:
        _emit_json({"store": location, "embedding": embedding, "agents": _dump(stats)})
        return EXIT_OK
    sys.stdout.write(f"store: {location}\nembedding: {embedding}\n")
    if not stats:
        sys.stdout.write("no agents yet\n")
    for s in stats:
        sys.stdout.write(
            f"{s.agent_id}: {s.fact_count} live facts, {s.superseded_count} superseded, "
            f"{s.alias_count} aliases, "
            f"{s.pinned_count} pinned, {s.checkpoint_count} checkpoints, {s.link_count} links, "
            f"avg weight {s.avg_weight:.3f}\n"
        )
    return EXIT_OK


def _cmd_agents(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        agents = memory.agents()
    if args.json:
        _emit_json(agents)
    else:
        sys.stdout.write("".join(f"{a}\n" for a in agents))
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    from graymatter.engine.export import render_json, render_markdown, write_export

    with open_memory(args) as memory:
        bundle = memory.export(args.agent)
        base = memory.data_dir or Path(resolve_data_dir(args))
    if args.out == "-":
        if args.format == "obsidian":
            raise CliUsageError("--format obsidian writes a directory; pass --out DIR")
        sys.stdout.write(render_markdown(bundle) if args.format == "markdown" else render_json(bundle))
        return EXIT_OK
    default_name = {"markdown": "graymatter.md", "json": "graymatter.json", "obsidian": "obsidian"}[
        args.format
    ]
    out = Path(args.out) if args.out else Path(base) / "export" / default_name
    if args.format != "obsidian" and out.is_dir():
        out = out / default_name
    written = write_export(bundle, args.format, out)
    if args.json:
        _emit_json(
            {"format": args.format, "out": str(out), "files": len(written), "facts": len(bundle.facts)}
        )
    else:
        _say(
            args,
            f"Exported {len(bundle.facts)} facts, {len(bundle.checkpoints)} checkpoints and "
            f"{len(bundle.links)} links to {out}.",
        )
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    if args.file == "-":
        raw = sys.stdin.read()
    else:
        try:
            raw = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliUsageError(f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from None
    with open_memory(args) as memory:
        report = memory.import_bundle(raw)
    if args.json:
        _emit_json(_dump(report))
    else:
        _say(
            args,
            f"Imported {report.facts_added} facts ({report.facts_skipped} already present), "
            f"{report.checkpoints_added} checkpoints, {report.links_added} links.",
        )
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from graymatter.faces.cli.demo import run_demo

    return run_demo(keep=args.keep, json_output=args.json)


# -- parser ----------------------------------------------------------------------------------------
def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    flag: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {"default": False}
    parser.add_argument(
        "--dir", metavar="DIR", help="data directory (default $GRAYMATTER_DIR or ./.graymatter)", **default
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="store URL: a directory, sqlite:///DIR or postgresql://... "
        "(default $GRAYMATTER_DATABASE_URL, else --dir)",
        **default,
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON", **flag)
    parser.add_argument("--quiet", action="store_true", help="print only requested data", **flag)
    parser.add_argument(
        "--no-daemon", action="store_true", help="accepted for compatibility (no daemon is used)", **flag
    )


def build_parser() -> argparse.ArgumentParser:
    """The full parser, including subcommands registered by extension modules."""
    parser = _Parser(prog="graymatter", description="Persistent memory and checkpoints for AI agents.")
    parser.add_argument("--version", action="version", version=_version())
    _global_options(parser, suppress=False)
    common = _Parser(add_help=False)
    _global_options(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    conf = {"choices": ("verified", "inferred", "unverified")}

    p = sub.add_parser("remember", parents=[common], help="store a fact")
    p.add_argument("words", nargs="+", metavar="AGENT TEXT", help="agent id and fact text ('-' reads stdin)")
    p.add_argument("--shared", action="store_true", help="store in the project-wide __shared__ namespace")
    p.add_argument("--confidence", default="inferred", **conf)
    p.set_defaults(func=_cmd_remember)

    p = sub.add_parser("recall", parents=[common], help="recall the facts most relevant to a query")
    p.add_argument("agent")
    p.add_argument("query")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--shared", action="store_true", help="search __shared__ instead of the agent")
    scope.add_argument("--all", action="store_true", help="search the agent and __shared__ together")
    p.add_argument("--top-k", type=int, default=None, help="number of facts (default 8)")
    p.add_argument("--explain", action="store_true", help="show per-signal ranks and fused scores")
    p.add_argument("--min-confidence", default=None, **conf)
    p.add_argument("--confidence-weight", type=float, default=None, help="0..0.5 (default 0)")
    p.add_argument("--min-relevance", type=float, default=None, help="0..1 fraction of the best score")
    p.set_defaults(func=_cmd_recall)

    p = sub.add_parser("revise", parents=[common], help="supersede a fact (exact text) with a correction")
    p.add_argument("agent")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--confidence", default=None, **conf)
    p.set_defaults(func=_cmd_revise)

    for action, text in (
        ("forget", "retire a fact (tombstone, never deleted)"),
        ("pin", "exempt a fact from decay and pruning"),
        ("unpin", "return a fact to normal decay"),
    ):
        p = sub.add_parser(action, parents=[common], help=text)
        p.add_argument("agent")
        p.add_argument("text", help="the exact fact text")
        p.set_defaults(func=_cmd_target(action))

    p = sub.add_parser("alias", parents=[common], help="declare vocabulary equivalents (or --list them)")
    p.add_argument("agent")
    p.add_argument("term", nargs="?")
    p.add_argument("equivalents", nargs="*")
    p.add_argument("--list", action="store_true", help="list the agent's aliases")
    p.set_defaults(func=_cmd_alias)

    p = sub.add_parser("link", parents=[common], help="record a typed edge between two entities")
    p.add_argument("agent")
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--relation", default="agent_link")
    p.set_defaults(func=_cmd_link)

    p = sub.add_parser("list", parents=[common], help="list an agent's facts")
    p.add_argument("agent")
    p.add_argument("--live", action="store_true", help="hide superseded facts")
    p.add_argument("--aliases", action="store_true", help="include alias facts")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("checkpoint", parents=[common], help="save, list or resume session checkpoints")
    cps = p.add_subparsers(dest="checkpoint_command", metavar="ACTION", parser_class=_Parser)
    cps.required = True
    c = cps.add_parser("save", parents=[common], help="save a checkpoint")
    c.add_argument("agent")
    c.add_argument("--state", help="a JSON object, @FILE or - for stdin (default {})")
    c.add_argument("--metadata", help='a JSON object, @FILE or - (merged over {"source": "cli"})')
    c.set_defaults(func=_cmd_checkpoint)
    c = cps.add_parser("list", parents=[common], help="list checkpoints, newest first")
    c.add_argument("agent")
    c.add_argument("--limit", type=int, default=None)
    c.set_defaults(func=_cmd_checkpoint)
    c = cps.add_parser("resume", parents=[common], help="print the latest (or the given) checkpoint")
    c.add_argument("agent")
    c.add_argument("id", nargs="?")
    c.set_defaults(func=_cmd_checkpoint)

    p = sub.add_parser("consolidate", parents=[common], help="run one decay/summarise/prune cycle now")
    p.add_argument("agent")
    p.set_defaults(func=_cmd_consolidate)

    p = sub.add_parser("stats", parents=[common], help="counts per agent")
    p.add_argument("agent", nargs="?")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser("agents", parents=[common], help="list agent ids")
    p.set_defaults(func=_cmd_agents)

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
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "import", parents=[common], help="import a JSON export (ids already present are skipped)"
    )
    p.add_argument("file", help="path of a graymatter JSON export, or - for stdin")
    p.set_defaults(func=_cmd_import)

    p = sub.add_parser("demo", parents=[common], help="a guided tour on a temporary store (offline)")
    p.add_argument("--keep", metavar="DIR", default=None, help="build the demo store in DIR and keep it")
    p.set_defaults(func=_cmd_demo)

    for name in EXTENSION_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def _version() -> str:
    from graymatter import __version__

    return f"graymatter {__version__}"


def _exit_code(exc: BaseException) -> int:
    from graymatter.errors import InvalidInput, NotFound

    if isinstance(exc, InvalidInput | CliUsageError):
        return EXIT_USAGE
    if isinstance(exc, NotFound):
        return EXIT_NOT_FOUND
    return EXIT_FAILURE


def _report_error(exc: BaseException, json_mode: bool) -> int:
    code = getattr(exc, "code", "usage_error" if isinstance(exc, CliUsageError) else "error")
    message = " ".join(str(exc).split()) or type(exc).__name__
    if json_mode:
        _emit_json({"error": {"code": code, "message": message}})
    else:
        sys.stderr.write(f"graymatter: error: {message}\n")
    return _exit_code(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        for name, value in (("dir", None), ("store", None), ("json", False), ("quiet", False)):
            if not hasattr(args, name):
                setattr(args, name, value)
        json_mode = bool(args.json)
        return int(args.func(args) or 0)
    except CliUsageError as exc:
        return _report_error(exc, json_mode)
    except KeyboardInterrupt:
        sys.stderr.write("graymatter: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_FAILURE
    except OSError as exc:  # a file the user named (export target, import source, state file) failed
        where = f" {exc.filename}" if exc.filename else ""
        return _report_error(RuntimeError(f"cannot access{where}: {exc.strerror or exc}"), json_mode)
    except Exception as exc:
        from graymatter.errors import GraymatterError

        if isinstance(exc, GraymatterError):
            return _report_error(exc, json_mode)
        if os.environ.get("GRAYMATTER_DEBUG"):
            raise
        return _report_error(RuntimeError(f"internal error ({type(exc).__name__}): {exc}"), json_mode)


if __name__ == "__main__":
    sys.exit(main())
