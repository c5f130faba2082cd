"""Errors to HTTP responses: one table from error class to status, read along the error's MRO."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from graymatter.errors import (
    AccessDenied,
    Conflict,
    CorruptRecord,
    GraymatterError,
    InvalidInput,
    NotFound,
    StorageError,
    for_error,
)
from graymatter.faces.http.asgi import Response, error_response
from graymatter.validation import first_error

log = logging.getLogger("graymatter.rest")

HTTP_STATUS: dict[type[BaseException], int] = {
    AccessDenied: 403,
    InvalidInput: 422,
    NotFound: 404,
    Conflict: 409,
    CorruptRecord: 500,
    StorageError: 503,
}
"""The status of each graymatter error family; any other graymatter error is a 422."""


def status_for(exc: GraymatterError) -> int:
    """The HTTP status of a graymatter error."""
    return for_error(HTTP_STATUS, exc, 422)


def error_for(exc: Exception, where: str) -> Response:
    """The JSON error response for an exception raised while serving ``where`` (``METHOD /path``)."""
    if isinstance(exc, ValidationError):
        field, message = first_error(exc)
        return error_response(422, "invalid_input", f"{field or 'body'}: {message}")
    if isinstance(exc, GraymatterError):
        status = status_for(exc)
        message = exc.message.splitlines()[0] if exc.message else exc.code
        if status >= 500:
            log.warning("request failed: %s", message)
        return error_response(status, exc.code, message)
    if isinstance(exc, ValueError):
        return error_response(422, "invalid_input", str(exc).splitlines()[0] if str(exc) else "invalid input")
    log.exception("internal error serving %s", where)
    return error_response(500, "internal", "internal error")
