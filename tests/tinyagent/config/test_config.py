"""Settings precedence (flags > environment > project config > user config > defaults), config file
validation, canonical cwd, AGENTS.md loading and the instructions digest."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.config.files import ConfigError
from tinyagent.config.settings import DEFAULT_MODELS, resolve_settings
from tinyagent.prompts import (
    MAX_AGENTS_MD_BYTES,
    PromptError,
    build_system_prompt,
    instructions_sha256,
)


def args(**overrides: object) -> argparse.Namespace:
    base = dict(
        provider=None,
        model=None,
        cwd=None,
        step_limit=None,
        cost_limit=None,
        time_limit=None,
        tool_timeout=None,
        stream=None,
        agents_md=None,
        quiet=None,
        output=None,
        config=None,
    )
    base.update(overrides)
    return argparse.Namespace(**base)


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "xdg").mkdir()
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    return work


def write_user(env: dict[str, str], text: str) -> Path:
    path = Path(env["XDG_CONFIG_HOME"]) / "tinyagent" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_defaults(home: dict[str, str], project: Path) -> None:
    resolved = resolve_settings(args(cwd=str(project)), home)
    assert (resolved.provider, resolved.model) == ("openai", DEFAULT_MODELS["openai"])
    assert (resolved.step_limit, resolved.cost_limit, resolved.time_limit) == (100, 0.0, 0.0)
    assert (resolved.tool_timeout, resolved.stream, resolved.agents_md) == (60.0, True, "auto")
    assert resolved.cwd == str(project.resolve())
    assert resolved.sources["step_limit"] == "default"


def test_each_layer_overrides_the_one_below(home: dict[str, str], project: Path) -> None:
    write_user(
        home, "provider: anthropic\nmodel: user-model\nstep_limit: 10\ncost_limit: 1.5\ntime_limit: 30\n"
    )
    (project / ".tinyagent.yaml").write_text("model: project-model\nstep_limit: 20\ncost_limit: 2.5\n")
    env = {**home, "TINYAGENT_STEP_LIMIT": "30", "TINYAGENT_COST_LIMIT": "3.5"}
    resolved = resolve_settings(args(cwd=str(project), step_limit=40), env)
    assert resolved.provider == "anthropic"  # user config (nothing above sets it)
    assert resolved.model == "project-model"  # project beats user
    assert resolved.cost_limit == 3.5  # environment beats project
    assert resolved.step_limit == 40  # flag beats environment
    assert resolved.time_limit == 30.0
    assert resolved.sources["step_limit"] == "flag"
    assert resolved.sources["cost_limit"] == "environment"
    assert resolved.sources["model"].startswith("project config")
    assert resolved.sources["provider"].startswith("user config")


def test_explicit_config_replaces_both_discovered_files(
    home: dict[str, str], project: Path, tmp_path: Path
) -> None:
    write_user(home, "step_limit: 10\n")
    (project / ".tinyagent.yaml").write_text("step_limit: 20\n")
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("cost_limit: 9\n")
    resolved = resolve_settings(args(cwd=str(project), config=str(explicit)), home)
    assert resolved.step_limit == 100
    assert resolved.cost_limit == 9.0
    assert resolved.config_files == (f"config file {explicit}",)


def test_provider_endpoint_and_key_come_from_user_config_only(home: dict[str, str], project: Path) -> None:
    write_user(home, "providers:\n  openai:\n    base_url: http://127.0.0.1:9/v1\n    api_key: sk-user\n")
    resolved = resolve_settings(args(cwd=str(project)), home)
    assert (resolved.base_url, resolved.api_key) == ("http://127.0.0.1:9/v1", "sk-user")
    assert "sk-user" not in repr(resolved)
    (project / ".tinyagent.yaml").write_text("providers:\n  openai:\n    base_url: http://evil.example/v1\n")
    with pytest.raises(ConfigError, match=r"sets providers\.openai\.api_key/base_url"):
        resolve_settings(args(cwd=str(project)), home)


def test_world_readable_user_config_with_a_key_warns(
    home: dict[str, str], project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_user(home, "providers:\n  anthropic:\n    api_key: sk-secret\n")
    path.chmod(0o644)
    resolve_settings(args(cwd=str(project)), home)
    err = capsys.readouterr().err
    assert "other users can read it; run chmod 600" in err
    assert "sk-secret" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("step_limt: 5\n", "step_limt: Extra inputs are not permitted"),
        ("step_limit: -1\n", "step_limit: Input should be greater than or equal to 0"),
        ("cost_limit: .nan\n", "cost_limit"),
        ("agents_md: sometimes\n", "agents_md"),
        ("- a list\n", "must be a YAML mapping"),
        ("key: [unclosed\n", "is not valid YAML (line 2)"),
    ],
)
def test_invalid_config_files_are_clear_errors(
    home: dict[str, str], project: Path, text: str, message: str
) -> None:
    (project / ".tinyagent.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        resolve_settings(args(cwd=str(project)), home)
    assert message in str(info.value)
    assert str(project / ".tinyagent.yaml") in str(info.value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TINYAGENT_STEP_LIMIT": "many"}, "TINYAGENT_STEP_LIMIT has an invalid value"),
        ({"TINYAGENT_COST_LIMIT": "inf"}, "TINYAGENT_COST_LIMIT must be a finite number >= 0"),
        ({"TINYAGENT_STREAM": "maybe"}, "TINYAGENT_STREAM has an invalid value"),
        ({"TINYAGENT_PROVIDER": "acme"}, "unknown provider 'acme'"),
        ({"TINYAGENT_AGENTS_MD": "always"}, "invalid AGENTS.md mode 'always'"),
    ],
)
def test_invalid_environment_values(home: dict[str, str], project: Path, env: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings(args(cwd=str(project)), {**home, **env})


def test_environment_booleans_and_flags(home: dict[str, str], project: Path) -> None:
    assert resolve_settings(args(cwd=str(project)), {**home, "TINYAGENT_STREAM": "off"}).stream is False
    assert resolve_settings(args(cwd=str(project), stream=True), {**home, "TINYAGENT_STREAM": "0"}).stream
    with pytest.raises(ConfigError, match="--cost-limit must be a finite number >= 0"):
        resolve_settings(args(cwd=str(project), cost_limit=float("nan")), home)
    with pytest.raises(ConfigError, match="--tool-timeout must be a finite number > 0"):
        resolve_settings(args(cwd=str(project), tool_timeout=0.0), home)


def test_cwd_is_canonical_and_must_exist(home: dict[str, str], project: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    assert resolve_settings(args(cwd=str(link)), home).cwd == str(project.resolve())
    with pytest.raises(ConfigError, match="working directory does not exist"):
        resolve_settings(args(cwd=str(tmp_path / "missing")), home)


def test_model_default_follows_the_provider(home: dict[str, str], project: Path) -> None:
    resolved = resolve_settings(args(cwd=str(project), provider="anthropic"), home)
    assert resolved.model == DEFAULT_MODELS["anthropic"]


def test_agents_md_is_loaded_once_in_auto_mode_and_never_in_off_mode(project: Path) -> None:
    (project / "AGENTS.md").write_text("Always run `make test` before submitting.\n")
    auto = build_system_prompt(str(project), "auto")
    off = build_system_prompt(str(project), "off")
    assert auto.count("Always run `make test` before submitting.") == 1
    assert "<agents-md>" in auto
    assert "make test" not in off
    assert str(project) in off
    assert instructions_sha256(auto) != instructions_sha256(off)


def test_instructions_digest_tracks_agents_md_and_config_instructions(project: Path) -> None:
    before = instructions_sha256(build_system_prompt(str(project), "auto"))
    assert instructions_sha256(build_system_prompt(str(project), "auto")) == before  # deterministic
    (project / "AGENTS.md").write_text("new rule\n")
    with_agents = instructions_sha256(build_system_prompt(str(project), "auto"))
    assert with_agents != before
    extra = instructions_sha256(build_system_prompt(str(project), "auto", "be terse"))
    assert extra != with_agents


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"x" * (MAX_AGENTS_MD_BYTES + 1), "larger than"), (b"\xff\xfe", "not UTF-8")],
)
def test_bad_agents_md_is_refused_in_auto_mode_only(project: Path, content: bytes, message: str) -> None:
    (project / "AGENTS.md").write_bytes(content)
    with pytest.raises(PromptError, match=message):
        build_system_prompt(str(project), "auto")
    assert "AGENTS.md" not in build_system_prompt(str(project), "off")


@given(
    step=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    env_step=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    project_step=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    user_step=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
)
@settings(max_examples=40, deadline=None)
def test_precedence_property(tmp_path_factory, step, env_step, project_step, user_step) -> None:
    root = tmp_path_factory.mktemp("prec")
    env = {"XDG_CONFIG_HOME": str(root / "xdg"), "HOME": str(root)}
    work = root / "w"
    work.mkdir()
    if user_step is not None:
        write_user(env, f"step_limit: {user_step}\n")
    if project_step is not None:
        (work / ".tinyagent.yaml").write_text(f"step_limit: {project_step}\n")
    if env_step is not None:
        env["TINYAGENT_STEP_LIMIT"] = str(env_step)
    expected = next((v for v in (step, env_step, project_step, user_step) if v is not None), 100)
    assert resolve_settings(args(cwd=str(work), step_limit=step), env).step_limit == expected


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_any_config_text_parses_or_fails_with_config_error(tmp_path_factory, text: str) -> None:
    from tinyagent.config.files import ConfigFile, load_config_file

    path = tmp_path_factory.mktemp("fuzz") / "config.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        parsed = load_config_file(path, project=True)
    except ConfigError as exc:
        assert str(exc).startswith(("config file", "project config"))
        assert "\n" not in str(exc)
    else:
        assert isinstance(parsed, ConfigFile)


@pytest.mark.parametrize(
    ("flag", "env", "config", "expected"),
    [
        (
            "http://127.0.0.1:1/v1",
            {"OPENAI_BASE_URL": "http://127.0.0.1:2/v1"},
            "http://127.0.0.1:3/v1",
            "http://127.0.0.1:1/v1/chat/completions",
        ),
        (
            None,
            {"OPENAI_BASE_URL": "http://127.0.0.1:2/v1"},
            "http://127.0.0.1:3/v1",
            "http://127.0.0.1:2/v1/chat/completions",
        ),
        (None, {}, "http://127.0.0.1:3/v1", "http://127.0.0.1:3/v1/chat/completions"),
        (None, {}, None, "https://api.openai.com/v1/chat/completions"),
    ],
    ids=["flag", "environment", "config", "default"],
)
def test_endpoint_precedence_through_build_provider(
    home: dict[str, str], project: Path, flag, env, config, expected
) -> None:
    from tinyagent.runner import build_provider

    if config:
        write_user(home, f"providers:\n  openai:\n    base_url: {config}\n    api_key: sk-config\n")
    environ = {**home, **env, "OPENAI_API_KEY": "sk-env"}
    resolved = resolve_settings(args(cwd=str(project)), environ)
    provider = build_provider(resolved, flag, environ)
    try:
        assert provider.url == expected
    finally:
        provider.close()


def test_api_key_environment_beats_config(home: dict[str, str], project: Path) -> None:
    from tinyagent.providers import resolve_api_key

    write_user(home, "providers:\n  anthropic:\n    api_key: sk-config\n")
    resolved = resolve_settings(args(cwd=str(project), provider="anthropic"), home)
    assert resolve_api_key("anthropic", {}, resolved.api_key) == "sk-config"
    assert resolve_api_key("anthropic", {"ANTHROPIC_API_KEY": "sk-env"}, resolved.api_key) == "sk-env"


def test_a_configured_model_belongs_to_the_configured_provider(home: dict[str, str], project: Path) -> None:
    write_user(
        home,
        "provider: anthropic\nmodel: claude-opus-4-1\nproviders:\n  openai:\n    model: gpt-4.1\n"
        "  ollama:\n    model: llama3.2\n",
    )
    assert resolve_settings(args(cwd=str(project)), home).model == "claude-opus-4-1"
    # another provider chosen by flag or environment never inherits the anthropic model name
    assert resolve_settings(args(cwd=str(project), provider="openai"), home).model == "gpt-4.1"
    env = {**home, "TINYAGENT_PROVIDER": "ollama"}
    assert resolve_settings(args(cwd=str(project)), env).model == "llama3.2"
    assert resolve_settings(args(cwd=str(project), provider="codex"), home).model == DEFAULT_MODELS["codex"]
    # an explicit model always wins
    assert resolve_settings(args(cwd=str(project), provider="openai", model="o3"), home).model == "o3"


def test_project_config_may_choose_a_per_provider_model(home: dict[str, str], project: Path) -> None:
    (project / ".tinyagent.yaml").write_text("providers:\n  openai:\n    model: gpt-4.1-nano\n")
    resolved = resolve_settings(args(cwd=str(project)), home)
    assert resolved.model == "gpt-4.1-nano"
    assert resolved.sources["model"].endswith("(providers.openai.model)")


def test_text_that_cannot_be_saved_as_utf8_is_refused(home: dict[str, str], project: Path) -> None:
    (project / ".tinyagent.yaml").write_text('instructions: "odd \\ud800 text"\n')
    with pytest.raises(ConfigError, match="the configured instructions is not valid UTF-8 text"):
        resolve_settings(args(cwd=str(project)), home)
    (project / ".tinyagent.yaml").unlink()
    with pytest.raises(ConfigError, match="the configured model is not valid UTF-8 text"):
        resolve_settings(args(cwd=str(project), model="gpt\udcff"), home)
