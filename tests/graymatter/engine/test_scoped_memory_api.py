"""ScopedMemory is an explicit implementation of the memory API: a new Memory method cannot bypass scoping."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import get_args, get_type_hints

from graymatter.engine.memory import Memory
from graymatter.engine.memory_api import MemoryAPI
from graymatter.engine.scoped import ScopedMemory


def public_members(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_scoped_memory_defines_every_public_memory_method_itself() -> None:
    own = set(vars(ScopedMemory))
    missing = public_members(Memory) - own
    assert not missing, f"ScopedMemory must check and delegate these Memory methods: {sorted(missing)}"
    assert "__getattr__" not in own and "store" not in public_members(ScopedMemory)


def test_the_memory_api_is_a_part_of_memory() -> None:
    declared = {name for name in vars(MemoryAPI) if not name.startswith("_")}
    assert declared and declared <= public_members(Memory), sorted(declared - public_members(Memory))


def parameters(method: Callable[..., object]) -> tuple[list[str], set[str]]:
    """The method's positional parameters and its keyword options (``**options: Unpack[...]`` spelled out)."""
    params = inspect.signature(method).parameters.values()
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    for var in (p for p in params if p.kind is p.VAR_KEYWORD):
        options = get_args(get_type_hints(method, include_extras=True)[var.name])[0]
        keywords |= options.__required_keys__ | options.__optional_keys__
    return positional, keywords


def test_scoped_methods_take_the_same_parameters_as_memory() -> None:
    for name in public_members(Memory):
        ours, theirs = getattr(ScopedMemory, name), getattr(Memory, name)
        if isinstance(theirs, property):
            assert isinstance(ours, property), name
            continue
        assert parameters(ours) == parameters(theirs), name
