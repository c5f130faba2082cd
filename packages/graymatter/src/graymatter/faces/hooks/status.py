"""``graymatter status``: facts, recalls, checkpoints and last activity per agent, and what hooks injected."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from graymatter.faces.hooks.log import log_path, read_lines

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

RECENT_RUNS: Final = 10
"""How many of the newest hook runs ``status`` lists."""

WINDOW: Final = timedelta(hours=24)
LOG_LINES_READ: Final = 5000


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if moment else None


def agent_rows(memory: Memory) -> list[dict[str, Any]]:
    """One row per agent: live facts, recalls (accesses of its facts), checkpoints, last activity."""
    rows = []
    for agent in memory.agents():
        stats = memory.stats(agent)
        facts = memory.list(agent, include_superseded=False)
        newest_checkpoint = memory.checkpoint_list(agent, 1)
        moments = [stats.newest_at, *(f.accessed_at for f in facts if f.access_count)]
        moments += [c.created_at for c in newest_checkpoint]
        rows.append(
            {
                "agent_id": agent,
                "facts": len(facts),
                "recalls": sum(f.access_count for f in facts),
                "checkpoints": stats.checkpoint_count,
                "last_activity": _iso(max((m for m in moments if m is not None), default=None)),
            }
        )
    return rows


def hook_summary(store_dir: Path | None, now: datetime | None = None) -> dict[str, Any]:
    """The newest hook runs and the last 24 hours' injections (count and estimated tokens) and errors."""
    if store_dir is None:
        return {"log": None, "recent": [], "last_24h": {"runs": 0, "injected": 0, "tokens": 0, "errors": 0}}
    records = list(read_lines(store_dir, LOG_LINES_READ))
    since = (now or datetime.now(UTC)) - WINDOW
    window = [r for r in records if _after(r.get("at"), since)]
    keep = ("at", "client", "event", "outcome", "agent_id", "tokens", "chars", "error", "ms")
    return {
        "log": str(log_path(store_dir)),
        "recent": [{k: r[k] for k in keep if k in r} for r in records[-RECENT_RUNS:]],
        "last_24h": {
            "runs": len(window),
            "injected": sum(1 for r in window if r.get("outcome") in ("injected", "remembered")),
            "tokens": sum(int(r.get("tokens") or 0) for r in window),
            "errors": sum(1 for r in window if r.get("outcome") == "error"),
        },
    }


def _after(stamp: object, since: datetime) -> bool:
    try:
        return isinstance(stamp, str) and datetime.fromisoformat(stamp) >= since
    except ValueError:
        return False


def render_text(location: str, rows: list[dict[str, Any]], hooks: dict[str, Any]) -> str:
    """The plain-text form of the status."""
    lines = [f"store: {location}"]
    if rows:
        width = max(len("agent"), *(len(r["agent_id"]) for r in rows))
        lines.append(f"{'agent':<{width}}  {'facts':>6}  {'recalls':>7}  {'checkpoints':>11}  last activity")
        for r in rows:
            lines.append(
                f"{r['agent_id']:<{width}}  {r['facts']:>6}  {r['recalls']:>7}  {r['checkpoints']:>11}  "
                f"{r['last_activity'] or '-'}"
            )
    else:
        lines.append("no agents yet")
    day = hooks["last_24h"]
    if hooks["log"] is None or not hooks["recent"]:
        lines.append("hooks: no runs logged (wire them with `graymatter init`)")
        return "\n".join(lines) + "\n"
    lines.append(
        f"hooks, last 24 h: {day['runs']} runs, {day['injected']} injected ~{day['tokens']} tokens, "
        f"{day['errors']} errors ({hooks['log']})"
    )
    for r in hooks["recent"]:
        what = f"~{r.get('tokens', 0)} tokens" if r.get("outcome") != "error" else f"{r.get('error')}"
        lines.append(f"  {r.get('at')}  {r.get('client')} {r.get('event')}: {r.get('outcome')} ({what})")
    return "\n".join(lines) + "\n"
