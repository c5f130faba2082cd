"""Human-readable and lossless exports: markdown, an Obsidian vault, and JSON (import reads it back).

Tombstones are included (marked), so the history of every correction stays inspectable.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from pathlib import Path

from graymatter.fsutil import DIR_MODE, atomic_write, ensure_private_dir
from graymatter.models import ExportBundle, Fact

FORMATS = ("markdown", "json", "obsidian")


def _status(fact: Fact) -> str:
    parts = []
    if fact.superseded_by:
        parts.append("retired" if fact.superseded_by == "agent" else f"superseded by {fact.superseded_by}")
    if fact.pinned:
        parts.append("pinned")
    parts.append(fact.confidence)
    return ", ".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_markdown(bundle: ExportBundle) -> str:
    """One markdown document: facts per agent (with status), aliases, links and checkpoints."""
    lines = ["# graymatter export", "", f"Exported {bundle.exported_at.isoformat()}", ""]
    by_agent: dict[str, list[Fact]] = defaultdict(list)
    for fact in bundle.facts:
        by_agent[fact.agent_id].append(fact)
    agents = sorted(
        {*by_agent, *(c.agent_id for c in bundle.checkpoints), *(ln.agent_id for ln in bundle.links)}
    )
    for agent in agents:
        lines += [f"## Agent `{_one_line(agent)}`", ""]
        facts = [f for f in by_agent.get(agent, []) if f.kind == "fact"]
        aliases = [f for f in by_agent.get(agent, []) if f.kind == "alias"]
        if facts:
            lines += ["### Facts", ""]
            for f in facts:
                mark = "~~" if f.superseded_by else ""
                lines.append(
                    f"- {mark}{_one_line(f.text)}{mark} — `{f.id}`, {f.created_at.date().isoformat()}, "
                    f"weight {f.weight:.3f}, {_status(f)}"
                )
            lines.append("")
        if aliases:
            lines += ["### Aliases", ""]
            for f in aliases:
                state = "" if f.live else " (retired)"
                lines.append(f"- **{_one_line(f.text)}** = {', '.join(f.equivalents)}{state}")
            lines.append("")
        links = [ln for ln in bundle.links if ln.agent_id == agent]
        if links:
            lines += ["### Links", ""]
            lines += [f"- {ln.source} —{ln.relation}→ {ln.target}" for ln in links]
            lines.append("")
        checkpoints = [c for c in bundle.checkpoints if c.agent_id == agent]
        if checkpoints:
            lines += ["### Checkpoints", ""]
            lines += [
                f"- `{c.id}` {c.created_at.isoformat()} ({c.message_count} messages, "
                f"{len(c.state)} state keys)"
                for c in checkpoints
            ]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_json(bundle: ExportBundle) -> str:
    """The lossless JSON export."""
    return bundle.model_dump_json(indent=2) + "\n"


_UNSAFE = re.compile(r"[^\w.-]+", re.UNICODE)


def _safe_name(value: str) -> str:
    cleaned = _UNSAFE.sub("-", value).strip("-.")
    return cleaned[:80] or "agent"


def folder_names(agents: list[str]) -> dict[str, str]:
    """A folder name per agent id, distinct even on case-insensitive filesystems.

    An id that is already a safe name is used as it is; any other (``team/alpha``, ``a b``, a long or
    case-twin id) gets a hash of the whole id, so ``team/alpha`` and ``team-alpha`` never share a folder.
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    for agent in sorted(agents, key=lambda a: (_safe_name(a) != a, a)):
        safe = _safe_name(agent)
        digest = hashlib.sha256(agent.encode("utf-8", "surrogatepass")).hexdigest()
        candidates = [safe] if safe == agent else []
        candidates += [f"{safe}-{digest[:10]}", f"{safe}-{digest}"]
        name = next((c for c in candidates if c.lower() not in taken), None)
        counter = 2
        while name is None or name.lower() in taken:
            name, counter = f"{safe}-{digest}-{counter}", counter + 1
        taken.add(name.lower())
        names[agent] = name
    return names


def write_obsidian(bundle: ExportBundle, out_dir: Path) -> list[Path]:
    """An Obsidian vault: one note per fact (YAML front matter), an index note per agent, a links note."""
    ensure_private_dir(out_dir, "choose another --out")
    written: list[Path] = []
    by_agent: dict[str, list[Fact]] = defaultdict(list)
    for fact in bundle.facts:
        by_agent[fact.agent_id].append(fact)
    folders = folder_names(list(by_agent))
    for agent, facts in sorted(by_agent.items()):
        folder = out_dir / folders[agent]
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        index = [f"# {_one_line(agent)}", "", f"agent_id: {_yaml(agent)}", ""]
        for fact in facts:
            front = [
                "---",
                f"id: {fact.id}",
                f"agent_id: {_yaml(fact.agent_id)}",
                f"kind: {fact.kind}",
                f"created_at: {fact.created_at.isoformat()}",
                f"confidence: {fact.confidence}",
                f"weight: {fact.weight:.6f}",
                f"pinned: {str(fact.pinned).lower()}",
                f"superseded_by: {fact.superseded_by or ''}",
                "---",
                "",
            ]
            body = fact.text + ("\n\nEquivalents: " + ", ".join(fact.equivalents) if fact.equivalents else "")
            if fact.superseded_by and fact.superseded_by != "agent":
                body += f"\n\nSuperseded by [[{fact.superseded_by}]]"
            path = folder / f"{fact.id}.md"
            atomic_write(path, ("\n".join(front) + body + "\n").encode("utf-8"))
            written.append(path)
            index.append(f"- [[{fact.id}]] {_one_line(fact.text)[:80]} ({_status(fact)})")
        links = [ln for ln in bundle.links if ln.agent_id == agent]
        if links:
            index += ["", "## Links", ""]
            index += [f"- [[{ln.source}]] —{ln.relation}→ [[{ln.target}]]" for ln in links]
        path = folder / "_index.md"
        atomic_write(path, ("\n".join(index) + "\n").encode("utf-8"))
        written.append(path)
    return written


def _yaml(value: str) -> str:
    """A YAML double-quoted scalar on one line: every non-printable character (newlines, YAML's other
    line breaks, controls) written as an escape."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def write_export(bundle: ExportBundle, fmt: str, out: Path) -> list[Path]:
    """Write ``bundle`` in ``fmt`` to ``out`` (a file for markdown/json, a directory for obsidian)."""
    if fmt == "obsidian":
        return write_obsidian(bundle, out)
    ensure_private_dir(out.parent, "choose another --out")
    text = render_markdown(bundle) if fmt == "markdown" else render_json(bundle)
    atomic_write(out, text.encode("utf-8"))
    return [out]
