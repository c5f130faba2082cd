"""The fact commands: remember, recall, revise, forget/pin/unpin, alias, link and list."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from graymatter.constants import CONFIDENCE_LABELS, DEFAULT_RELATION, SHARED_AGENT_ID
from graymatter.errors import CliUsageError
from graymatter.faces.cli.exit_codes import EXIT_OK
from graymatter.faces.cli.options import open_memory, require_known_agent
from graymatter.faces.cli.render import dump, emit_json, fact_line, recall_lines, report, say

CONFIDENCE = {"choices": CONFIDENCE_LABELS}
TARGET_ACTIONS = {  # action: (help, past tense)
    "forget": ("retire a fact (a tombstone: kept as history, never returned)", "Retired"),
    "pin": ("exempt a fact from decay and pruning", "Pinned"),
    "unpin": ("return a fact to normal decay", "Unpinned"),
}
CLI_PROVENANCE = {"interface": "cli"}


def cmd_remember(args: argparse.Namespace) -> int:
    words = args.words
    if args.shared:
        if len(words) != 1:
            raise CliUsageError(
                f"remember --shared takes only TEXT (it stores in {SHARED_AGENT_ID}); drop the agent id"
            )
        agent, text = SHARED_AGENT_ID, words[0]
    else:
        if len(words) != 2:
            raise CliUsageError("remember takes AGENT TEXT (or --shared TEXT)")
        agent, text = words
    if text == "-":
        from graymatter.bounded import read_source
        from graymatter.config import MemoryConfig

        text = read_source("-", MemoryConfig.from_env().max_text_bytes, "text")
    with open_memory(args) as memory:
        fact = memory.remember(
            agent, text, confidence=args.confidence, provenance=CLI_PROVENANCE, session=args.session
        )
    report(args, fact, f'Stored fact {fact.id} for agent "{fact.agent_id}".')
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    scope = "shared" if args.shared else "all" if args.all else "agent"
    options: dict[str, Any] = {"scope": scope}
    for name in ("min_confidence", "confidence_weight", "min_relevance"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    with open_memory(args, existing=True) as memory:
        if scope != "shared":
            require_known_agent(memory, args.agent)
        if args.explain:
            results: list[Any] = memory.recall_explain(args.agent, args.query, args.top_k, **options)
        else:
            results = memory.recall(args.agent, args.query, args.top_k, **options)
    if args.json:
        emit_json(dump(results))
        return EXIT_OK
    label = {
        "agent": f"agent {args.agent}",
        "shared": SHARED_AGENT_ID,
        "all": f"agent {args.agent} + {SHARED_AGENT_ID}",
    }[scope]
    lines = recall_lines(label, args.query, results, owners=scope == "all", explain=args.explain)
    if args.quiet:  # data only: no header, no "No memories found.", no feedback
        lines = lines[1:] if results else []
    else:
        from graymatter.engine.feedback import weak_match_feedback

        weak = weak_match_feedback(args.query, results)
        lines += [] if weak is None else ["", weak.message]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return EXIT_OK


def cmd_revise(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        require_known_agent(memory, args.agent)
        revision = memory.revise(
            args.agent, args.old, args.new, confidence=args.confidence, provenance=CLI_PROVENANCE
        )
    report(args, revision, f"Stored {revision.fact.id}; superseded {', '.join(revision.superseded_ids)}.")
    return EXIT_OK


def target_command(action: str) -> Callable[[argparse.Namespace], int]:
    """The command for ``forget``, ``pin`` or ``unpin``: act on every live fact with the exact text."""

    def run(args: argparse.Namespace) -> int:
        with open_memory(args, existing=True) as memory:
            require_known_agent(memory, args.agent)
            ids = getattr(memory, action)(args.agent, args.text)
        if args.json:
            emit_json({"action": action, "agent_id": args.agent, "fact_ids": ids})
        else:
            say(args, f"{TARGET_ACTIONS[action][1]} {len(ids)} fact(s): {', '.join(ids)}.")
        return EXIT_OK

    return run


def cmd_alias(args: argparse.Namespace) -> int:
    if args.list and args.term is not None:
        raise CliUsageError("alias --list takes only AGENT")
    with open_memory(args, existing=args.list) as memory:
        if args.list:
            require_known_agent(memory, args.agent)
            aliases = memory.aliases(args.agent)
            if args.json:
                emit_json(dump(aliases))
            else:
                for alias in aliases:
                    sys.stdout.write(f"{alias.text} = {', '.join(alias.equivalents)}  ({alias.id})\n")
                if not aliases:
                    say(args, "No aliases.")
            return EXIT_OK
        if args.term is None or not args.equivalents:
            raise CliUsageError("alias takes AGENT TERM EQUIVALENT [EQUIVALENT ...] (or AGENT --list)")
        fact = memory.alias(args.agent, args.term, args.equivalents, provenance=CLI_PROVENANCE)
    report(args, fact, f"Alias {fact.id}: {fact.text} = {', '.join(fact.equivalents)}.")
    return EXIT_OK


def cmd_link(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        link = memory.link(args.agent, args.source, args.target, args.relation, provenance=CLI_PROVENANCE)
    report(args, link, f'Linked "{link.source}" -> "{link.target}" ({link.relation}).')
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with open_memory(args, existing=True) as memory:
        require_known_agent(memory, args.agent)
        facts = memory.list(args.agent, include_superseded=not args.live, include_aliases=args.aliases)
    if args.json:
        emit_json(dump(facts))
        return EXIT_OK
    sys.stdout.write("".join(fact_line(fact) + "\n" for fact in facts))
    if not facts:
        say(args, "No facts.")
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the fact commands to the ``graymatter`` subparsers."""
    p = sub.add_parser("remember", parents=[common], help="store a fact")
    p.add_argument("words", nargs="+", metavar="AGENT TEXT", help="agent id and fact text ('-' reads stdin)")
    p.add_argument("--shared", action="store_true", help="store in the project-wide __shared__ namespace")
    p.add_argument("--confidence", default="inferred", **CONFIDENCE)
    p.add_argument(
        "--session",
        default=None,
        metavar="ID",
        help="mark the fact as a turn of conversation ID (recall lends context only within a session)",
    )
    p.set_defaults(func=cmd_remember)
    _register_recall(sub, common)
    p = sub.add_parser("revise", parents=[common], help="supersede a fact (exact text) with a correction")
    for name in ("agent", "old", "new"):
        p.add_argument(name)
    p.add_argument("--confidence", default=None, **CONFIDENCE)
    p.set_defaults(func=cmd_revise)
    for action, (text, _) in TARGET_ACTIONS.items():
        p = sub.add_parser(action, parents=[common], help=text)
        p.add_argument("agent")
        p.add_argument("text", help="the exact fact text")
        p.set_defaults(func=target_command(action))
    _register_alias_link_list(sub, common)


def _register_recall(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("recall", parents=[common], help="recall the facts most relevant to a query")
    p.add_argument("agent")
    p.add_argument("query")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--shared", action="store_true", help="search __shared__ instead of the agent")
    scope.add_argument("--all", action="store_true", help="search the agent and __shared__ together")
    p.add_argument("--top-k", type=int, default=None, help="number of facts (default 8)")
    p.add_argument("--explain", action="store_true", help="show per-signal ranks and fused scores")
    p.add_argument("--min-confidence", default=None, **CONFIDENCE)
    p.add_argument("--confidence-weight", type=float, default=None, help="0..0.5 (default 0)")
    p.add_argument("--min-relevance", type=float, default=None, help="0..1 fraction of the best score")
    p.set_defaults(func=cmd_recall)


def _register_alias_link_list(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("alias", parents=[common], help="declare vocabulary equivalents (or --list them)")
    p.add_argument("agent")
    p.add_argument("term", nargs="?")
    p.add_argument("equivalents", nargs="*")
    p.add_argument("--list", action="store_true", help="list the agent's aliases")
    p.set_defaults(func=cmd_alias)
    p = sub.add_parser("link", parents=[common], help="record a typed edge between two entities")
    for name in ("agent", "source", "target"):
        p.add_argument(name)
    p.add_argument("--relation", default=DEFAULT_RELATION)
    p.set_defaults(func=cmd_link)
    p = sub.add_parser("list", parents=[common], help="list an agent's facts")
    p.add_argument("agent")
    p.add_argument("--live", action="store_true", help="hide superseded facts")
    p.add_argument("--aliases", action="store_true", help="include alias facts")
    p.set_defaults(func=cmd_list)
