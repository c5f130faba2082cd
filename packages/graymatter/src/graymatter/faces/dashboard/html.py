"""HTML building for the dashboard: every substituted value is escaped unless it is already ``Markup``."""

from __future__ import annotations

import functools
import html as _html
import string
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

PREFIX = "/ui"
"""Where the dashboard's pages live (``/`` redirects here); REST keeps every other path."""


class Markup(str):
    """A string that is already safe HTML (built by :func:`render` or :func:`join` from escaped parts)."""

    __slots__ = ()


def esc(value: Any) -> Markup:
    """``value`` as safe HTML: ``Markup`` passes, anything else is converted to text and escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(_html.escape("" if value is None else str(value), quote=True))


@functools.lru_cache(maxsize=512)
def _compiled(template: str) -> string.Template:
    return string.Template(template)


def render(template: str, **values: Any) -> Markup:
    """Substitute ``$name`` placeholders of ``template`` (trusted markup) with escaped ``values``."""
    return Markup(_compiled(template).substitute({k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    """Escaped ``parts`` joined with the trusted separator ``sep``."""
    return Markup(sep.join(esc(p) for p in parts))


def url(page: str, **params: Any) -> str:
    """A dashboard URL: ``/ui/<page>?<params>`` with None-valued parameters left out."""
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return f"{PREFIX}/{page}" + (f"?{query}" if query else "")


def link(href: str, text: Any, *, current: bool = False) -> Markup:
    """An anchor; the current page is marked with ``aria-current`` (and styled by more than colour)."""
    mark = ' aria-current="page"' if current else ""
    return render(f'<a href="$href"{mark}>$text</a>', href=href, text=text)


def hidden(name: str, value: Any) -> Markup:
    """A hidden form field."""
    return render('<input type="hidden" name="$name" value="$value">', name=name, value=value)


def table(headers: Iterable[str], rows: Iterable[Iterable[Any]], caption: str = "") -> Markup:
    """A table with a header row; cells are escaped unless ``Markup`` and carry their column's name (narrow
    screens show each row as a card labelled by it)."""
    names = list(headers)
    head = join(render('<th scope="col">$h</th>', h=h) for h in names)
    labels = [esc(h) for h in names]
    body = Markup(
        "".join(
            "<tr>"
            + "".join(f'<td data-label="{h}">{esc(c)}</td>' for h, c in zip(labels, row, strict=True))
            + "</tr>"
            for row in rows
        )
    )
    cap = render("<caption>$c</caption>", c=caption) if caption else Markup("")
    return render(
        '<div class="scroll"><table>$cap<thead><tr>$head</tr></thead><tbody>$body</tbody></table></div>',
        cap=cap,
        head=head,
        body=body,
    )


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · graymatter</title>
<link rel="stylesheet" href="$prefix/static/dashboard.css">
<script src="$prefix/static/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="$prefix/">graymatter</a>
<nav aria-label="Main">$nav</nav>
<div class="who">$who</div>
</header>
<main id="main" tabindex="-1">
<h1>$title</h1>
$flash
$body
</main>
</body>
</html>
"""


def page(title: str, body: Markup, *, nav: Markup, who: Markup, flash: Markup | str = "") -> bytes:
    """A whole HTML document, encoded."""
    notice = render('<p class="flash" role="status">$f</p>', f=flash) if flash else Markup("")
    doc = render(PAGE, title=title, body=body, nav=nav, who=who, flash=notice, prefix=PREFIX)
    return doc.encode()
