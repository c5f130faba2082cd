"""Strict JSON parsing of a checkpoint: no NaN or Infinity, no duplicate keys, bounded nesting."""

from __future__ import annotations

import json
from typing import Any, NoReturn

from tinyagent.resume.refusal import refuse


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _NonFinite(f"non-finite number {name}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey("duplicate key")
    return obj


def parse_strict_json(text: str) -> Any:
    """The JSON document in `text`, or a "malformed JSON" refusal naming only the position of the fault."""
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey:
        refuse("malformed JSON", "an object in the checkpoint repeats a key; the file is damaged")
    except json.JSONDecodeError as exc:
        refuse(
            "malformed JSON",
            f"the checkpoint is not valid JSON (line {exc.lineno}, column {exc.colno}); it is damaged or "
            "truncated, resume from an intact trajectory",
        )
    except _NonFinite:
        refuse("malformed JSON", "the checkpoint contains NaN or Infinity, which JSON does not allow")
    except ValueError:  # e.g. an integer literal beyond the interpreter's digit limit
        refuse("malformed JSON", "the checkpoint contains a number that cannot be parsed; it is damaged")
    except RecursionError:
        refuse("malformed JSON", "the checkpoint nests too deeply to be a trajectory; it is damaged")
