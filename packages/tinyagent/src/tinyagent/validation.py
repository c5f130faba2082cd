"""The first error of a pydantic validation failure, described without the rejected input (stdlib only)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FirstError:
    """Where and why validation failed first, and how many errors there were (0: not a validation error)."""

    loc: tuple[int | str, ...] = ()
    type: str = "invalid"
    msg: str = "invalid value"
    count: int = 0

    def where(self, top_level: str, shown: Callable[[int | str], str] = str) -> str:
        """The dotted location, each part rendered by `shown`; `top_level` when the location is empty."""
        return ".".join(shown(part) for part in self.loc) or top_level


def first_error(exc: Exception) -> FirstError:
    """The first error of a pydantic `ValidationError` (read without input values); empty for others."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return FirstError()
    items = errors(include_url=False, include_input=False, include_context=False)
    if not items:
        return FirstError()
    first = items[0]
    return FirstError(
        loc=tuple(first.get("loc", ())),
        type=str(first.get("type", "invalid")),
        msg=str(first.get("msg", "invalid value")),
        count=len(items),
    )
