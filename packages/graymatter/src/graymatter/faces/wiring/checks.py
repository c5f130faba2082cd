"""Doctor's vocabulary: one :class:`Check` per finding, the report, and the registry of extra checks.

Extra checks come from modules named ``hooks_*.py`` in this package that define
``doctor_checks(context: WiringContext) -> list[Check]``; they are discovered lazily, like their edits.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from graymatter.faces.wiring.edits import WiringContext

Status = Literal["ok", "info", "warn", "fail"]
_MARK = {"ok": "ok  ", "info": "info", "warn": "warn", "fail": "FAIL"}


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, its status, a one-line message and the one command that fixes it."""

    name: str
    status: Status
    message: str
    fix: str | None = None


@dataclass(frozen=True)
class Report:
    """Every check of a doctor run, in order."""

    checks: tuple[Check, ...]

    @property
    def failed(self) -> bool:
        """Whether a hard failure was found (exit 1)."""
        return any(check.status == "fail" for check in self.checks)

    @property
    def problems(self) -> int:
        """How many warnings and failures were found."""
        return sum(check.status in ("warn", "fail") for check in self.checks)

    def lines(self) -> list[str]:
        """The text report: one line per check, its fix indented below, then a summary."""
        lines = []
        for check in self.checks:
            lines.append(f"[{_MARK[check.status]}] {check.name}: {check.message}")
            if check.fix:
                lines.append(f"       fix: {check.fix}")
        lines.append("all good" if not self.problems else f"{self.problems} problem(s) found")
        return lines

    def as_json(self) -> dict[str, object]:
        """The ``--json`` form."""
        return {
            "ok": not self.problems,
            "failed": self.failed,
            "checks": [
                {"name": c.name, "status": c.status, "message": c.message, "fix": c.fix} for c in self.checks
            ],
        }


def extension_checks(context: WiringContext) -> list[Check]:
    """The checks that ``hooks_*`` modules of this package contribute for ``context``."""
    import graymatter.faces.wiring as package

    found: list[Check] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda module: module.name):
        if info.name.startswith("hooks_"):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            provider = getattr(module, "doctor_checks", None)
            if provider is not None:
                found.extend(provider(context))
    return found
