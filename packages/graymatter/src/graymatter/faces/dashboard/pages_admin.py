"""Dashboard pages for operators: token management (administrators) and service health."""

from __future__ import annotations

import re
import time

from graymatter.errors import AccessDenied, InvalidInput
from graymatter.faces.dashboard.context import Ctx, Page, Redirect
from graymatter.faces.dashboard.html import Markup, join, render, table, url
from graymatter.faces.dashboard.pages_facts import when

_SAMPLE = re.compile(r"^(graymatter_[a-z_]+)(?:\{([^}]*)\})? ([0-9.eE+-]+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _admin(ctx: Ctx) -> None:
    if not ctx.is_admin or ctx.settings.tokens is None:
        raise AccessDenied("token management needs an all-namespaces read-write token on `graymatter serve`")


def tokens(ctx: Ctx) -> Page:
    """Every token (never a secret), a form to create one and a button to revoke each."""
    _admin(ctx)
    assert ctx.settings.tokens is not None
    rows = []
    for record in ctx.settings.tokens.list():
        revoke = (
            render(
                '<form method="post" action="$a">$csrf<input type="hidden" name="id" value="$i">'
                '<button type="submit" name="do" value="revoke">Revoke</button></form>',
                a=url("tokens"),
                csrf=ctx.csrf(),
                i=record.id,
            )
            if record.active
            else Markup("")
        )
        state = f"revoked {when(record.revoked_at)}" if record.revoked_at else "active"
        rows.append([record.id, record.label, record.access, ", ".join(record.agents), state, revoke])
    create = render(
        '<h2>Create a token</h2><form method="post" action="$a" class="action">$csrf'
        '<label>Agents (comma-separated, or *) <input name="agents" required maxlength="2000"></label> '
        '<label>Label <input name="label" maxlength="200"></label> '
        '<label><input type="checkbox" name="read_only" value="1"> read-only</label> '
        '<button type="submit" name="do" value="create">Create</button></form>',
        a=url("tokens"),
        csrf=ctx.csrf(),
    )
    listing = (
        table(["Id", "Label", "Access", "Agents", "State", ""], rows) if rows else Markup("<p>No tokens.</p>")
    )
    return Page("Tokens", join([listing, create]))


def token_action(ctx: Ctx) -> Page | Redirect:
    """Create (the new token is shown once, on this response only) or revoke a token."""
    _admin(ctx)
    service = ctx.settings.tokens
    assert service is not None
    if ctx.param("do") == "revoke":
        if not service.revoke(ctx.param("id")):
            raise InvalidInput("no active token has that id")
        return Redirect(url("tokens", ok="revoked"))
    if ctx.param("do") != "create":
        raise InvalidInput("unknown token action")
    from graymatter.engine.access import parse_agents

    token, record = service.create(
        parse_agents(ctx.param("agents")),
        read_only=ctx.form.get("read_only") == "1",
        label=ctx.form.get("label", ""),
    )
    body = render(
        "<p>Token <code>$id</code> ($access on $agents) — shown once, copy it now:</p>"
        '<p><input class="secret" readonly value="$token" aria-label="The new token"></p>'
        '<p><a href="$back">Back to tokens</a></p>',
        id=record.id,
        access=record.access,
        agents=", ".join(record.agents),
        token=token,
        back=url("tokens"),
    )
    return Page("Token created", body)


def parse_metrics(text: str) -> dict[str, dict[str, float]]:
    """Per route: requests, mean latency (ms) and rate (requests/s) from the Prometheus exposition."""
    routes: dict[str, dict[str, float]] = {}
    started = time.time()
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match:
            continue
        name, raw, value = match.group(1), match.group(2) or "", float(match.group(3))
        labels = dict(_LABEL.findall(raw))
        if name == "graymatter_process_start_time_seconds":
            started = value
        elif "route" in labels and name.endswith(("_sum", "_count")) and "le" not in labels:
            slot = routes.setdefault(labels["route"], {"requests": 0.0, "sum": 0.0})
            slot["sum" if name.endswith("_sum") else "requests"] = value
    uptime = max(time.time() - started, 1.0)
    for slot in routes.values():
        slot["mean_ms"] = 1000 * slot["sum"] / slot["requests"] if slot["requests"] else 0.0
        slot["rate"] = slot["requests"] / uptime
    return routes


def health(ctx: Ctx) -> Page:
    """Store (kind, round trip), embedder (model, backlog), and request rates and latency by route."""
    memory = ctx.memory.memory
    started = time.perf_counter()
    try:
        memory.store.ping()
        store_state = f"ok, round trip {1000 * (time.perf_counter() - started):.1f} ms"
    except Exception as exc:
        store_state = f"unavailable ({type(exc).__name__})"
    pending = memory.store.pending_embedding_count()
    store_rows: list[list[object]] = [
        ["store", memory.store.kind],
        ["status", store_state],
        ["embedder", ctx.memory.embedding_model or "keyword only"],
        ["embeddings pending", pending],
    ]
    parts = [table(["Part", "State"], store_rows)]
    if ctx.settings.metrics_text is not None:
        routes = parse_metrics(ctx.settings.metrics_text())
        rows = [
            [route, f"{m['requests']:.0f}", f"{m['rate']:.3f}", f"{m['mean_ms']:.1f}"]
            for route, m in sorted(routes.items())
        ]
        recall = routes.get("/recall")
        note = "Recall latency: no REST recall served yet."
        if recall:
            note = f"Recall latency: {recall['mean_ms']:.1f} ms mean over {recall['requests']:.0f} requests."
        parts += [
            render("<h2>Requests (from /metrics)</h2><p>$n</p>", n=note),
            table(["Route", "Requests", "Per second", "Mean ms"], rows),
        ]
    return Page("Health", join(parts))
