"""One CLI grammar: global flags anywhere, "did you mean", --quiet, and read commands that create nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from graymatter.faces.cli.grammar import SWITCH_FLAGS, lift_global_flags, suggest_choice

Cli = Callable[..., Any]

_WORDS = st.text(alphabet="abcdefgh-", min_size=1, max_size=6).filter(lambda w: not w.startswith("-"))


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@given(
    before=st.lists(_WORDS, max_size=4),
    after=st.lists(_WORDS, max_size=4),
    switches=st.sets(st.sampled_from(SWITCH_FLAGS)),
    directory=_WORDS,
    inline=st.booleans(),
)
def test_lifting_keeps_the_rest_in_order_and_finds_every_global(
    before: list[str], after: list[str], switches: set[str], directory: str, inline: bool
) -> None:
    dir_flag = [f"--dir={directory}"] if inline else ["--dir", directory]
    argv = [*before, *sorted(switches), *dir_flag, *after]
    flags, rest = lift_global_flags(argv)
    assert rest == [*before, *after]
    assert flags.switches == switches and flags.values == {"--dir": directory}


def test_everything_after_double_dash_is_left_alone() -> None:
    flags, rest = lift_global_flags(["remember", "--json", "a", "--", "--quiet", "--dir", "x"])
    assert flags.switches == {"--json"} and not flags.values
    assert rest == ["remember", "a", "--", "--quiet", "--dir", "x"]


def test_a_value_flag_without_its_value_is_left_for_argparse() -> None:
    assert lift_global_flags(["agents", "--dir"]) == (lift_global_flags([])[0], ["agents", "--dir"])


def test_suggestion_for_a_near_command_and_the_choices_otherwise() -> None:
    message = "argument COMMAND: invalid choice: 'remembr' (choose from 'remember', 'recall')"
    assert suggest_choice(message) == "unknown command 'remembr' (did you mean 'remember'?)"
    far = "argument COMMAND: invalid choice: 'zzz' (choose from 'remember', 'recall')"
    assert suggest_choice(far) == "unknown command 'zzz' (choose from 'remember', 'recall')"
    assert suggest_choice("the following arguments are required: agent") == (
        "the following arguments are required: agent"
    )


def test_global_flags_after_any_command(cli: Cli, gm_dir: Path) -> None:
    assert cli("remember", "a", "Deploys happen on Tuesdays", "--quiet").stdout == ""
    stored = cli("remember", "a", "Acme is on the Enterprise plan", "--json")
    assert stored.code == 0 and stored.json()["agent_id"] == "a"
    agents = cli("agents", "--json", "--no-daemon", f"--dir={gm_dir}", use_dir=False)
    assert agents.code == 0 and agents.json() == ["a"]
    listing = cli("checkpoint", "list", "a", "--json")
    assert listing.code == 0 and listing.json() == []


def test_typo_of_a_command_gets_a_suggestion_and_exit_2(cli: Cli) -> None:
    result = cli("recal", "a", "q")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "graymatter: error: unknown command 'recal' (did you mean 'recall'?) (see: graymatter --help)"
    )
    nested = cli("checkpoint", "resum", "a")
    assert nested.code == 2 and "did you mean 'resume'?" in nested.stderr


def test_quiet_recall_prints_only_the_facts(cli: Cli) -> None:
    cli("remember", "a", "Deploys happen on Tuesdays")
    quiet = cli("--quiet", "recall", "a", "when do we deploy")
    assert quiet.stdout == "1. Deploys happen on Tuesdays\n"
    assert cli("recall", "a", "kubernetes", "--quiet").stdout == ""
    assert cli("stats", "--quiet").stdout.startswith("a: ")


def test_read_commands_on_a_missing_store_fail_and_create_nothing(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    reads = [
        ["recall", "a", "q"],
        ["list", "a"],
        ["stats"],
        ["agents"],
        ["export", "--out", "-"],
        ["checkpoint", "list", "a"],
        ["checkpoint", "resume", "a"],
        ["alias", "a", "--list"],
        ["forget", "a", "x"],
        ["revise", "a", "x", "y"],
        ["consolidate", "a"],
    ]
    before = _tree(tmp_path)
    for argv in reads:
        result = cli("--dir", str(missing), *argv, use_dir=False)
        assert result.code == 3, (argv, result.stderr)
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"graymatter: error: no graymatter store at {missing} (nothing was created)")
        assert "remember AGENT" in line
    assert _tree(tmp_path) == before


def test_missing_store_hint_names_the_nearest_existing_store(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    assert cli("--dir", str(project / ".graymatter"), "remember", "a", "x", use_dir=False).code == 0
    result = cli("--dir", str(project / "src" / "gm"), "agents", use_dir=False, cwd=project / "src")
    assert result.code == 3
    assert f"the nearest existing store is {project / '.graymatter'}" in result.stderr


def test_migrate_refuses_a_missing_source(cli: Cli, tmp_path: Path) -> None:
    result = cli("migrate", "--from", str(tmp_path / "nope"), "--to", str(tmp_path / "target"), use_dir=False)
    assert result.code == 3 and "no graymatter store at" in result.stderr
    assert not (tmp_path / "nope").exists() and not (tmp_path / "target").exists()


def test_unknown_agent_says_so_and_lists_the_known_ones(cli: Cli) -> None:
    cli("remember", "support-bot", "Deploys happen on Tuesdays")
    cli("remember", "billing", "Invoices go out on the 1st")
    typo = cli("recall", "suport-bot", "deploy")
    assert typo.code == 3 and typo.stderr.strip() == (
        'graymatter: error: unknown agent "suport-bot" (did you mean "support-bot"?)'
    )
    other = cli("--json", "list", "zebra")
    assert other.code == 3
    message = 'unknown agent "zebra"; known agents: billing, support-bot'
    assert other.json() == {"error": {"code": "unknown_agent", "message": message}}
    assert cli("recall", "a", "q", "--shared").code == 0  # __shared__ always exists


def test_remember_shared_refuses_an_agent_id_instead_of_dropping_it(cli: Cli) -> None:
    result = cli("remember", "--shared", "support-bot", "Never share customer data")
    assert result.code == 2 and "drop the agent id" in result.stderr
    assert cli("--json", "agents").code == 3  # nothing was written, so there is still no store


def test_working_directory_is_untouched_by_a_read(cli: Cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = cli("recall", "a", "q", use_dir=False, cwd=work)
    assert result.code == 3 and not any(work.iterdir())


def test_serve_usage_errors_exit_2_like_every_command(cli: Cli) -> None:
    for argv in (["serve", "--workers", "0"], ["serve", "--http", "nonsense"], ["serve", "--bogus"]):
        result = cli(*argv)
        assert result.code == 2, (argv, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("graymatter: error: ")
