"""Dashboard pages for checkpoints (a list, the state as a collapsible JSON tree, a diff) and the graph."""

from __future__ import annotations

import json
from typing import Any

from graymatter.faces.dashboard.context import Ctx, Page, agent_nav
from graymatter.faces.dashboard.html import Markup, hidden, join, link, render, table, url
from graymatter.faces.dashboard.pages_facts import when
from graymatter.faces.dashboard.svg import link_graph

LIST_LIMIT = 200
TREE_DEPTH = 40
TREE_NODES = 5_000
SHOWN_VALUE_CHARS = 500
SIGNS = {"added": "+", "removed": "−", "changed": "~"}


def checkpoints(ctx: Ctx) -> Page:
    """An agent's checkpoints, newest first, with a form to diff any two."""
    found = ctx.memory.checkpoint_list(ctx.agent, LIST_LIMIT)
    rows = [
        [
            link(url("checkpoint", agent=ctx.agent, id=c.id), c.id),
            when(c.created_at),
            len(c.state),
            c.message_count,
            c.provenance.interface,
        ]
        for c in found
    ]
    parts = [agent_nav(ctx.agent, "checkpoints")]
    if not rows:
        parts.append(Markup("<p>No checkpoints yet.</p>"))
        return Page(f"Checkpoints of {ctx.agent}", join(parts), agent=ctx.agent)
    parts.append(table(["Checkpoint", "Saved", "State keys", "Messages", "Interface"], rows))
    options = join(render('<option value="$i">$i · $w</option>', i=c.id, w=when(c.created_at)) for c in found)
    older = found[1].id if len(found) > 1 else found[0].id
    parts.append(
        render(
            '<h2>Compare two</h2><form method="get" action="$a" class="diff">$agent'
            '<label>From <select name="a">$o1</select></label> '
            '<label>To <select name="b">$o2</select></label> '
            '<button type="submit">Diff</button></form>',
            a=url("diff"),
            agent=hidden("agent", ctx.agent),
            o1=Markup(options.replace(f'value="{older}"', f'value="{older}" selected', 1)),
            o2=options,
        )
    )
    return Page(f"Checkpoints of {ctx.agent}", join(parts), agent=ctx.agent)


def json_tree(value: Any, key: str = "state", depth: int = 0, budget: list[int] | None = None) -> Markup:
    """``value`` as nested ``<details>`` elements: collapsible with keyboard or mouse, no script needed."""
    budget = budget if budget is not None else [TREE_NODES]
    budget[0] -= 1
    if budget[0] < 0 or depth > TREE_DEPTH:
        return render('<li><span class="key">$k</span> …</li>', k=key)
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        kind = f"{{{len(value)}}}" if isinstance(value, dict) else f"[{len(value)}]"
        children = join(json_tree(v, str(k), depth + 1, budget) for k, v in items)
        return render(
            '<li><details$open><summary><span class="key">$k</span> <span class="kind">$kind</span></summary>'
            "<ul>$c</ul></details></li>",
            open=Markup(" open") if depth < 2 else "",
            k=key,
            kind=kind,
            c=children,
        )
    return render('<li><span class="key">$k</span>: <code>$v</code></li>', k=key, v=_short(value))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 1] + "…"


def checkpoint(ctx: Ctx) -> Page:
    """One checkpoint: its metadata and its state as a JSON tree."""
    item = ctx.memory.checkpoint_get(ctx.agent, ctx.param("id"))
    meta = table(
        ["Field", "Value"],
        [
            ["id", item.id],
            ["saved", when(item.created_at)],
            ["messages", item.message_count],
            ["interface", item.provenance.interface],
            ["token", item.provenance.token_id or "—"],
            ["metadata", _short(item.metadata)],
        ],
    )
    tree = render('<ul class="tree">$t</ul>', t=json_tree(item.state))
    return Page("Checkpoint", join([agent_nav(ctx.agent, "checkpoints"), meta, tree]), agent=ctx.agent)


def flatten(value: Any, path: str = "", out: dict[str, str] | None = None) -> dict[str, str]:
    """Leaf paths of a JSON value (``a.b[0]``) and their JSON text; nested empty containers are leaves."""
    out = {} if out is None else out
    if not path and value in ({}, []):
        return out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flatten(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
    else:
        out[path or "(root)"] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return out


def diff_rows(old: Any, new: Any) -> list[tuple[str, str, str, str]]:
    """``(change, path, before, after)`` for every leaf that differs; change is added, removed or changed."""
    a, b = flatten(old), flatten(new)
    rows = []
    for path in sorted(a.keys() | b.keys()):
        if path not in a:
            rows.append(("added", path, "", b[path]))
        elif path not in b:
            rows.append(("removed", path, a[path], ""))
        elif a[path] != b[path]:
            rows.append(("changed", path, a[path], b[path]))
    return rows


def diff(ctx: Ctx) -> Page:
    """The differences between the states of two checkpoints of one agent."""
    first = ctx.memory.checkpoint_get(ctx.agent, ctx.param("a"))
    second = ctx.memory.checkpoint_get(ctx.agent, ctx.param("b"))
    rows = [
        [
            render('<span class="tag tag-$c">$sign $c</span>', c=c, sign=SIGNS[c]),
            render("<code>$p</code>", p=p),
            _cut(x),
            _cut(y),
        ]
        for c, p, x, y in diff_rows(first.state, second.state)
    ]
    head = render(
        "<p>From <code>$a</code> ($wa) to <code>$b</code> ($wb).</p>",
        a=first.id,
        wa=when(first.created_at),
        b=second.id,
        wb=when(second.created_at),
    )
    body = (
        table(["Change", "Path", "Before", "After"], rows) if rows else Markup("<p>The states are equal.</p>")
    )
    return Page("Checkpoint diff", join([agent_nav(ctx.agent, "checkpoints"), head, body]), agent=ctx.agent)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 1] + "…"


def graph(ctx: Ctx) -> Page:
    """The agent's entity links as an inline SVG graph, with the same links as a table."""
    links = ctx.memory.links(ctx.agent)
    rows = [[k.source, k.relation, k.target, when(k.created_at)] for k in links[:500]]
    parts = [agent_nav(ctx.agent, "graph"), link_graph(links)]
    if rows:
        parts.append(table(["Source", "Relation", "Target", "Created"], rows, "The links as a table"))
    return Page(f"Links of {ctx.agent}", join(parts), agent=ctx.agent)
