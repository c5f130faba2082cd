"""Property tests of the server-side argument rules (no store involved: they run before any effect)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.errors import ToolFailure
from graymatter.faces.mcp_server.arguments import ON_MISSING_ERROR, validate_arguments
from graymatter.faces.mcp_server.specs import TOOL_SPECS

SPECS = {spec.name: spec for spec in TOOL_SPECS}


def check(tool: str, arguments: dict[str, Any]) -> Any:
    return validate_arguments(tool, SPECS[tool].arguments, arguments)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(deadline=None)
@given(json_values.filter(lambda v: v not in ("error", "empty") or not isinstance(v, str)))
def test_any_other_on_missing_value_is_refused_with_the_exact_text(value: Any) -> None:
    with pytest.raises(ToolFailure) as refused:
        check("checkpoint_resume", {"agent_id": "a", "on_missing": value})
    assert str(refused.value) == ON_MISSING_ERROR


@pytest.mark.parametrize("value", ["error", "empty"])
def test_the_two_on_missing_values_pass(value: str) -> None:
    parsed = check("checkpoint_resume", {"agent_id": "a", "on_missing": value})
    assert parsed.on_missing == value  # type: ignore[attr-defined]


@settings(deadline=None)
@given(
    bad=json_values.filter(lambda v: not isinstance(v, str) or not v.strip()),
    which=st.sampled_from(["agent_id", "agent"]),
)
def test_each_given_identity_must_be_a_non_blank_string(bad: Any, which: str) -> None:
    arguments = {"action": "add", "text": "t", "agent_id": "valid", "agent": "valid", which: bad}
    with pytest.raises(ToolFailure) as refused:
        check("memory_reflect", arguments)
    assert str(refused.value) == f"{which} must be a non-blank string"


@settings(deadline=None)
@given(agent_id=st.text(min_size=1).filter(str.strip), agent=st.text(min_size=1).filter(str.strip))
def test_valid_identities_are_used_unchanged_and_agent_id_wins(agent_id: str, agent: str) -> None:
    parsed = check("memory_reflect", {"action": "pin", "agent_id": agent_id, "agent": agent})
    assert parsed.agent_id == agent_id and parsed.agent == agent  # type: ignore[attr-defined]


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_validation_never_raises_anything_but_a_tool_failure(arguments: dict[str, Any]) -> None:
    for spec in TOOL_SPECS:
        try:
            validate_arguments(spec.name, spec.arguments, arguments)
        except ToolFailure as failure:
            assert str(failure) and "\n" not in str(failure)
