"""Bounded memos keyed by text: what a recall worked out about a fact's text, kept for the next recalls."""

from __future__ import annotations

import itertools
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember_bounded(memo: dict[K, V], key: K, value: V, limit: int) -> None:
    """Store ``value`` under ``key``; a memo holding ``limit`` entries first drops its oldest eighth (all of
    it when another thread changed it meanwhile: a memo only ever saves work, so losing it is safe)."""
    if len(memo) >= limit:
        try:
            for old in list(itertools.islice(memo, max(1, limit // 8))):
                memo.pop(old, None)
        except RuntimeError:  # changed size during iteration
            memo.clear()
    memo[key] = value


__all__ = ["remember_bounded"]
