"""How a failed tool call reads: one table from error class to the text of the ``isError`` result."""

from __future__ import annotations

import logging
from collections.abc import Callable

from graymatter.errors import Conflict, GraymatterError, InvalidInput, NotFound, ToolFailure, for_error

logger = logging.getLogger("graymatter.faces.mcp_server.tools")  # the name the server log has always used


def first_line(message: str) -> str:
    """The first line of an error message (``unknown error`` when it is blank)."""
    return message.strip().splitlines()[0] if message.strip() else "unknown error"


def _verbatim(tool: str, exc: BaseException) -> str:
    return str(exc)


def _first_line_only(tool: str, exc: BaseException) -> str:
    return first_line(str(exc))


def _prefixed(tool: str, exc: BaseException) -> str:
    return f"{tool.replace('_', ' ')} error: {first_line(str(exc))}"


ERROR_TEXTS: dict[type[BaseException], Callable[[str, BaseException], str]] = {
    ToolFailure: _verbatim,  # contract texts, word for word
    NotFound: _first_line_only,
    InvalidInput: _first_line_only,
    Conflict: _prefixed,  # "memory reflect error: the fact was revised ... by another writer meanwhile; ..."
    GraymatterError: _prefixed,  # other engine errors name the tool
}
"""Error class -> text; an error takes the entry of its nearest listed class. Anything else is a bug."""


def error_text(tool: str, exc: Exception) -> str:
    """One-line text of a failed call: contract texts verbatim, engine errors prefixed, crashes generic."""
    render = for_error(ERROR_TEXTS, exc, None)
    if render is not None:
        return render(tool, exc)
    logger.exception("tool %s failed unexpectedly", tool)
    return f"{tool.replace('_', ' ')} error: internal error ({type(exc).__name__}); see the server log"
