"""Provider keys stay out of reach of the commands the agent runs (issue 14, the /proc/$PPID/environ repro).

Through the real CLI against the provider stub: the command looks for the key in the agent's environment
(/proc/$PPID/environ), in its own environment and in a workspace file that happens to hold it; nothing of
the key reaches the command's view, the trajectory or the request bodies (only the Authorization header).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.env import hermetic_env
from support.provider_stubs import ProviderStub
from support.request_bodies import tool_results
from support.tinyagent_cli import load_json, run_cli

KEY = "sk-test-0123456789abcdef"


def _probe(variable: str) -> str:
    """The command of the repro: the key variable in the agent's and the command's environment, a file."""
    return (
        f"tr '\\0' '\\n' < /proc/$PPID/environ | grep -c {variable}=; "
        "grep -c sk- /proc/$PPID/environ; "
        "env | grep -c sk-; "
        "cat secrets.env"
    )


@pytest.mark.parametrize(
    ("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_a_command_cannot_read_the_provider_key(tmp_path: Path, provider: str, variable: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "secrets.env").write_text(f"TOKEN={KEY}\n", encoding="utf-8")
    replies = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": _probe(variable)}}]},
        {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]},
    ]
    out = tmp_path / "run1.json"
    with ProviderStub(replies) as stub:
        argv = ["-t", "x", "--provider", provider, "-m", "m", "--base-url", stub.base_url(provider)]
        result = run_cli(
            [*argv, "--cwd", work, "-o", out], cwd=tmp_path, env=hermetic_env(tmp_path, {variable: KEY})
        )
        requests = list(stub.requests)
    assert result.returncode == 0, result.stderr
    assert len(requests) == 2
    # The key is still sent where it belongs: the authentication header.
    auth = requests[0].headers.get("x-api-key") or requests[0].headers.get("authorization", "")
    assert auth.endswith(KEY)
    # The command's view: no key variable in the agent's /proc environ, none in its own environment,
    # and the key in the workspace file is redacted before it is recorded or sent.
    [seen] = tool_results(provider, requests[1].body)
    assert seen == "exit code: 0\n0\n0\n0\nTOKEN=[redacted]\n"
    for request in requests:
        assert KEY not in json.dumps(request.body)
    saved = out.read_text(encoding="utf-8")
    assert KEY not in saved
    assert load_json(out)["messages"][3]["content"] == seen
    assert KEY not in result.stderr and KEY not in result.stdout
