"""Models built from trusted, complete fields without ``model_construct``'s per-field default handling.

A recall builds one :class:`~graymatter.models.RecallHit` per result and a store read one
:class:`~graymatter.models.Fact` per row, from values it produced or checked itself. :func:`constructor`
gives the fast way only after checking, at import, that it builds the same model as ``model_construct``
(equal, same fields set); a pydantic whose internals differ gets the public API instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def fast_constructor(model: type[M]) -> Callable[[dict[str, Any]], M]:
    """Build ``model`` by setting its ``__dict__`` to the given (complete, trusted) fields."""
    fields = frozenset(model.model_fields)

    def build(values: dict[str, Any]) -> M:
        instance = model.__new__(model)
        object.__setattr__(instance, "__dict__", values)
        object.__setattr__(instance, "__pydantic_fields_set__", set(fields))
        object.__setattr__(instance, "__pydantic_extra__", None)
        object.__setattr__(instance, "__pydantic_private__", None)
        return instance

    build.__name__ = f"build_{model.__name__}_fast"
    return build


def constructor(
    model: type[M], sample: dict[str, Any], accept: Callable[[M], bool] = lambda _: True
) -> Callable[[dict[str, Any]], M]:
    """The fast constructor of ``model`` if it builds ``sample`` (every field) exactly as
    ``model_construct`` does and ``accept`` holds for the result, else ``model_construct`` itself."""
    fast = fast_constructor(model)

    def public(values: dict[str, Any]) -> M:
        return model.model_construct(**values)

    try:
        quick, slow = fast(dict(sample)), public(dict(sample))
        same = quick == slow and quick.model_fields_set == slow.model_fields_set
        if same and set(sample) == set(model.model_fields) and accept(quick):
            return fast
    except Exception:  # a future pydantic changed its internals: the public API
        pass
    return public


__all__ = ["constructor", "fast_constructor"]
