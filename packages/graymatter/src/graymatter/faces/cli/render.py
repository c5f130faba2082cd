"""How commands print: JSON on stdout, ``--quiet``-aware messages, and the text forms of listings."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graymatter.models import Checkpoint, Fact, MemoryStats, RecallExplanation


def emit_json(payload: Any) -> None:
    """Write one JSON document (one line) to stdout."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, sort_keys=False) + "\n")


def dump(model: Any) -> Any:
    """The JSON form of a result model (or of a list of them)."""
    if isinstance(model, list):
        return [dump(m) for m in model]
    return model.model_dump(mode="json")


def say(args: argparse.Namespace, text: str) -> None:
    """Print a human message unless ``--quiet``."""
    if not args.quiet:
        sys.stdout.write(text + "\n")


def report(args: argparse.Namespace, model: Any, text: str) -> None:
    """The result of a write: its JSON form with ``--json``, else the human message."""
    if args.json:
        emit_json(dump(model))
    else:
        say(args, text)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def recall_lines(label: str, query: str, hits: list[Any], *, owners: bool, explain: bool) -> list[str]:
    """The text form of a recall: a header, then one line per hit (plus its ranks with ``explain``)."""
    lines = [f"# Memory context [{label}] / {json.dumps(query, ensure_ascii=False)}"]
    if not hits:
        lines.append("No memories found.")
    for i, hit in enumerate(hits, 1):
        owner = f" [{hit.agent_id}]" if owners else ""
        lines.append(f"{i}. {one_line(hit.text, 500)}{owner}")
        if explain:
            lines.append(_explain_line(hit))
    return lines


def _explain_line(hit: RecallExplanation) -> str:
    r = hit.ranks
    ranks = ", ".join(
        f"{name} {rank if rank else '-'}"
        for name, rank in (
            ("keyword", r.keyword_rank),
            ("vector", r.vector_rank),
            ("recency", r.recency_rank),
        )
    )
    if hit.keyword_source in ("context", "phrase", "synonym"):
        note = {
            "phrase": "phrase",
            "synonym": f"via synonym {hit.keyword_synonym}",
            "context": f"context of {hit.keyword_context_from}",
        }[hit.keyword_source]
        ranks = ranks.replace(f"keyword {r.keyword_rank}", f"keyword {r.keyword_rank} ({note})", 1)
    if hit.fused_position is not None:
        ranks += f", fused place {hit.fused_position} before re-reading"
    return (
        f"   id {hit.id} | ranks: {ranks} | fused {r.fused_score:.6f} (k={r.k}) | "
        f"score {hit.score:.6f} | relevance {'-' if hit.relevance is None else f'{hit.relevance:.2f}'} | "
        f"{hit.confidence}{', pinned' if hit.pinned else ''}"
    )


def fact_line(fact: Fact) -> str:
    """One fact of ``graymatter list``: id, text and its flags."""
    flags = [fact.confidence] + (["pinned"] if fact.pinned else [])
    if fact.superseded_by:
        flags.append(f"superseded by {fact.superseded_by}")
    if fact.kind == "alias":
        flags.append("alias")
    return f"{fact.id}  {one_line(fact.text, 120)}  ({', '.join(flags)})"


def checkpoint_table(checkpoints: list[Checkpoint]) -> str:
    """``graymatter checkpoint list``: a header and one row per checkpoint."""
    rows = [f"{'ID':<26}  {'CREATED':<32}  MESSAGES\n"]
    rows += [f"{c.id:<26}  {c.created_at.isoformat():<32}  {c.message_count}\n" for c in checkpoints]
    return "".join(rows)


def stats_line(s: MemoryStats) -> str:
    """One agent of ``graymatter stats``."""
    return (
        f"{s.agent_id}: {s.fact_count} live facts, {s.superseded_count} superseded, "
        f"{s.alias_count} aliases, "
        f"{s.pinned_count} pinned, {s.checkpoint_count} checkpoints, {s.link_count} links, "
        f"avg weight {s.avg_weight:.3f}\n"
    )
