"""The export/import part of the ``Memory`` facade: lossless bundles out, and back in without duplicates."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from graymatter import validation as check
from graymatter.engine.memory_core import MemoryCore, gc_paused
from graymatter.errors import InvalidInput
from graymatter.models import ExportBundle, ImportReport, utcnow


class TransferMethods(MemoryCore):
    """Bundles of facts (tombstones and aliases included), checkpoints and links; imports skip known ids."""

    def export(self, agent_id: str | None = None) -> ExportBundle:
        """Everything (or one namespace): facts including tombstones and aliases, checkpoints, links."""
        self._access.flush()
        agent = None if agent_id is None else self._agent(agent_id)
        facts = self.store.list_facts(agent, include_superseded=True, kinds=("fact", "alias"))
        return ExportBundle(
            exported_at=utcnow(),
            facts=facts,
            checkpoints=list(reversed(self.store.list_checkpoints(agent))),
            links=self.store.links(None if agent is None else [agent]),
        )

    def import_bundle(self, bundle: ExportBundle | dict[str, Any] | str) -> ImportReport:
        """Load an export; records whose ids already exist are skipped (re-importing is a no-op)."""
        with gc_paused():  # a model and a dict per record, none cyclic (memory_core.gc_paused)
            parsed = parse_bundle(bundle)
            self._check_facts(parsed)
            _check_checkpoints(parsed)
            facts_added, facts_skipped = self.store.import_facts(parsed.facts)
            checkpoints, links = parsed.checkpoints, parsed.links
            # the parsed facts die here, while the collector is paused: it resumes with none to walk (from
            # JSON text or a dict they are ours alone; a bundle passed as a model stays the caller's)
            del parsed, bundle
        cps_added, cps_skipped = self.store.import_checkpoints(checkpoints)
        links_added, links_skipped = self.store.import_links(links)
        if facts_added:
            self.reembed_pending(limit=None)
        return ImportReport.model_construct(  # counts the stores returned (ints): as validation builds it
            facts_added=facts_added,
            facts_skipped=facts_skipped,
            checkpoints_added=cps_added,
            checkpoints_skipped=cps_skipped,
            links_added=links_added,
            links_skipped=links_skipped,
        )

    def _check_facts(self, bundle: ExportBundle) -> None:
        """Each fact's agent id and text as ``remember`` checks them, in bundle order: the first failure
        raises what ``validation.agent_id`` / ``validation.text`` raise. Two shortcuts with the same
        outcome: an agent id already checked passes again (the check depends on its value alone), and an
        ASCII text within the limit that is not blank passes (its size is its length, it holds no
        surrogate)."""
        agents: set[str] = set()
        limit = self.config.max_text_bytes
        for fact in bundle.facts:
            agent, text = fact.agent_id, fact.text
            if type(agent) is not str or agent not in agents:
                agents.add(self._agent(agent))
            if not (type(text) is str and text.isascii() and len(text) <= limit and text.strip()):
                self._text(text)


def _check_checkpoints(bundle: ExportBundle) -> None:
    """Refuse, before anything is written, a checkpoint whose state, messages or metadata JSON cannot hold
    (``NaN``, ``Infinity``, which Python's JSON reader accepts): stored, it could never be resumed."""
    for checkpoint in bundle.checkpoints:
        try:
            for field in ("state", "messages", "metadata"):
                check.json_bytes(getattr(checkpoint, field), field)
        except InvalidInput as exc:
            raise InvalidInput(f"checkpoint {checkpoint.id}: {exc}") from None


def parse_bundle(bundle: ExportBundle | dict[str, Any] | str) -> ExportBundle:
    """``bundle`` as an :class:`ExportBundle` (from a dict or JSON text), else ``InvalidInput``."""
    if isinstance(bundle, ExportBundle):
        return bundle
    try:
        return (
            ExportBundle.model_validate_json(bundle)
            if isinstance(bundle, str)
            else ExportBundle.model_validate(bundle)
        )
    except Exception as exc:
        where, message = check.first_error(exc) if isinstance(exc, ValidationError) else ("", "invalid")
        raise InvalidInput(
            f"not a graymatter JSON export ({where or type(exc).__name__}: {message})"
        ) from None
