"""Expect a refusal from `validate_checkpoint`: one clean line naming its category, no secret."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.resume_checkpoints import SECRET
from tinyagent.resume.refusal import ResumeRefused
from tinyagent.resume.validate import validate_checkpoint


def refusal(raw: bytes) -> ResumeRefused:
    with pytest.raises(ResumeRefused) as info:
        validate_checkpoint(raw)
    refused = info.value
    line = refused.line()
    assert line.startswith(f"tinyagent: cannot resume: {refused.category}: ")
    assert "\n" not in line and "\r" not in line
    assert SECRET not in line
    return refused


def encode(document: Any) -> bytes:
    return json.dumps(document, indent=1).encode("utf-8")


def refused_document(document: dict[str, Any]) -> ResumeRefused:
    return refusal(encode(document))
