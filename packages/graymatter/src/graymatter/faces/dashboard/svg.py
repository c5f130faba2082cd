"""Inline SVG drawings for the dashboard (no JavaScript library): a sparkline, rank bars, a link graph."""

from __future__ import annotations

import math
from collections.abc import Sequence

from graymatter.faces.dashboard.html import Markup, join, render
from graymatter.models import Link

MAX_GRAPH_NODES = 60


def sparkline(counts: Sequence[int], label: str, width: int = 120, height: int = 24) -> Markup:
    """A polyline of ``counts`` (oldest first) with a text alternative naming the total."""
    if not counts:
        return Markup("")
    top = max(max(counts), 1)
    step = width / max(len(counts) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (c / top) * (height - 4):.1f}" for i, c in enumerate(counts)
    )
    return render(
        '<svg class="spark" role="img" width="$w" height="$h" viewBox="0 0 $w $h"><title>$label</title>'
        '<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="$points"/></svg>',
        w=width,
        h=height,
        label=label,
        points=points,
    )


def rank_bar(rank: int, of: int, signal: str) -> Markup:
    """A bar whose length falls with the rank (1 = full); ``rank`` 0 means the signal did not rank it."""
    text = f"{signal}: rank {rank}" if rank else f"{signal}: not ranked"
    length = 0.0 if rank == 0 else 100.0 * (of - rank + 1) / max(of, 1)
    return render(
        '<span class="rank"><svg role="img" width="100" height="10" viewBox="0 0 100 10"><title>$t</title>'
        '<rect class="track" width="100" height="10"/><rect class="bar" width="$len" height="10"/></svg>'
        " <span>$label</span></span>",
        t=text,
        len=f"{max(length, 0.0):.1f}",
        label=f"#{rank}" if rank else "—",
    )


def link_graph(links: Sequence[Link], size: int = 560) -> Markup:
    """Entities on a circle, one line per link with its relation; at most ``MAX_GRAPH_NODES`` entities."""
    nodes: list[str] = []
    for item in links:
        for label in (item.source, item.target):
            if label not in nodes and len(nodes) < MAX_GRAPH_NODES:
                nodes.append(label)
    if not nodes:
        return Markup("<p>No links yet.</p>")
    centre, radius = size / 2, size / 2 - 90
    where = {
        label: (
            centre + radius * math.cos(2 * math.pi * i / len(nodes)),
            centre + radius * math.sin(2 * math.pi * i / len(nodes)),
        )
        for i, label in enumerate(nodes)
    }
    edges = []
    for item in links:
        if item.source in where and item.target in where:
            (x1, y1), (x2, y2) = where[item.source], where[item.target]
            edges.append(
                render(
                    '<g class="edge"><title>$s $r $t</title><line x1="$x1" y1="$y1" x2="$x2" y2="$y2"/>'
                    '<text x="$mx" y="$my">$r</text></g>',
                    s=item.source,
                    r=item.relation,
                    t=item.target,
                    x1=f"{x1:.0f}",
                    y1=f"{y1:.0f}",
                    x2=f"{x2:.0f}",
                    y2=f"{y2:.0f}",
                    mx=f"{(x1 + x2) / 2:.0f}",
                    my=f"{(y1 + y2) / 2:.0f}",
                )
            )
    circles = [
        render(
            '<g class="node"><circle cx="$x" cy="$y" r="6"/><text x="$x" y="$ty">$label</text></g>',
            x=f"{x:.0f}",
            y=f"{y:.0f}",
            ty=f"{y - 10:.0f}",
            label=label if len(label) <= 40 else label[:39] + "…",
        )
        for label, (x, y) in where.items()
    ]
    return render(
        '<svg class="graph" role="img" viewBox="0 0 $s $s" width="100%"><title>$title</title>$e$n</svg>',
        s=size,
        title=f"{len(nodes)} entities, {len(edges)} links",
        e=join(edges),
        n=join(circles),
    )
