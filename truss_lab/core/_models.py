"""Governed records (ADR 0011): trust, provenance, memory entries, events, policies.

All are frozen pydantic models with ``extra="forbid"``: a record that has been
written is never mutated in place; supersession creates a new record.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._clock import utcnow
from ._errors import ConfigError, PolicyError
from ._threshold import check_threshold

__all__ = [
    "AgentEvent",
    "EntryKind",
    "LedgerRef",
    "LessonExtractionPolicy",
    "MemoryEntry",
    "MemoryQuery",
    "MemoryWrite",
    "Policy",
    "PolicyRecord",
    "PolicyTarget",
    "PolicyWrite",
    "Provenance",
    "Trust",
]

HEX64 = r"^[0-9a-f]{64}$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Trust(enum.StrEnum):
    """How far a memory entry or policy record is trusted."""

    unverified = "unverified"
    verified = "verified"


class EntryKind(enum.StrEnum):
    """What a memory entry is. SI-1 writes only ``lesson``."""

    fact = "fact"
    lesson = "lesson"
    preference = "preference"
    procedure = "procedure"
    episode = "episode"


class LessonExtractionPolicy(enum.StrEnum):
    """When lessons are extracted after a verdict (ADR 0011)."""

    off = "off"
    """Default-safe: no extractor call, no memory write."""
    on = "on"
    """Extract and write every parsed lesson."""
    model_scored = "model-scored"
    """Extract; write lessons with salience >= extraction_min_salience."""


class PolicyTarget(enum.StrEnum):
    """The tunable policy surfaces. L0 core identity and operator-signed
    boundaries are deliberately absent: they are never auto-tunable."""

    routing = "routing"
    persona_self = "persona_self"
    tool_set = "tool_set"
    verification = "verification"
    salience = "salience"
    goal_repinning = "goal_repinning"

    @classmethod
    def parse(cls, value: object) -> PolicyTarget:
        """The target named by ``value``.

        Parameters
        ----------
        value : object
            A target's name (or a target).

        Returns
        -------
        PolicyTarget
            The target.

        Raises
        ------
        PolicyError
            No target has that name.
        """
        if isinstance(value, PolicyTarget):
            return value
        try:
            return cls(str(value))
        except ValueError:
            allowed = ", ".join(t.value for t in cls)
            raise PolicyError(
                f"policy target {value!r} is not tunable: expected one of {allowed} "
                "(core identity and operator-signed boundaries are never policy targets)"
            ) from None


class LedgerRef(_Frozen):
    """A pointer at one signed journal entry."""

    seq: int = Field(ge=1)
    """The entry's sequence number (1-based)."""
    hash: str = Field(pattern=HEX64)
    """The entry's hash: lowercase hex SHA-256 of its canonical form."""


class Provenance(_Frozen):
    """Where a governed record came from."""

    produced_by: LedgerRef
    """The journal entry that caused this record (for a lesson: the verdict)."""
    sources: tuple[LedgerRef, ...] = ()
    """Journal entries the record draws on; for a lesson it includes ``produced_by``."""
    extractor_id: str | None = None
    """The extractor configuration (model + prompt version) that proposed it."""
    run_id: str | None = None
    """The extraction run (or decision) that wrote it."""
    prompt_version: str | None = None
    """The prompt template version used, when a model was prompted."""
    created_at: datetime = Field(default_factory=utcnow)
    """When the record was created (UTC)."""


class MemoryEntry(_Frozen):
    """One governed memory entry."""

    entry_id: str
    """Stable id; for lessons derived from (verdict hash, extractor, lesson_index)."""
    kind: EntryKind
    """What the entry is."""
    trust: Trust = Trust.unverified
    """Trust tier; SI-1 lessons are always unverified."""
    text: str = Field(min_length=1)
    """The entry's content."""
    provenance: Provenance
    """Governed provenance."""
    salience: float | None = None
    """The salience the lesson was gated on, when scored."""
    evidence: tuple[str, ...] = ()
    """Evidence strings the extractor cited (e.g. ``check:tz_regression``)."""
    lesson_index: int | None = None
    """Position of the lesson in its completion's ``lessons`` array."""
    superseded_by: str | None = None
    """The entry that replaces this one, if any."""

    @property
    def created_at(self) -> datetime:
        return self.provenance.created_at


class MemoryQuery(_Frozen):
    """A read of memory. The default returns verified entries only (ADR 0011):
    lessons appear only when unverified entries are asked for explicitly.

    Parameters
    ----------
    trust : tuple of Trust, default (Trust.verified,)
        Trust tiers to return. Add ``Trust.unverified`` to see lessons.
    kinds : tuple of EntryKind, optional
        Kinds to return; ``None`` means all.
    run_id : str, optional
        Only entries written by this run.
    extractor_id : str, optional
        Only entries proposed by this extractor.
    produced_by_seq : int, optional
        Only entries produced by this journal entry.
    include_superseded : bool, default False
        Also return entries that have been superseded.
    limit : int, optional
        At most this many rows (newest first).

    See Also
    --------
    query_memory : Runs the query.

    Examples
    --------
    >>> tl.MemoryQuery().trust  # verified only
    (<Trust.verified: 'verified'>,)
    >>> query = tl.MemoryQuery.unverified_lessons(run_id="good", limit=5)
    >>> len(tl.query_memory(store, query))
    5
    """

    trust: tuple[Trust, ...] = (Trust.verified,)
    """Trust tiers to return. Add ``Trust.unverified`` to see lessons."""
    kinds: tuple[EntryKind, ...] | None = None
    """Kinds to return; ``None`` means all."""
    run_id: str | None = None
    """Only entries written by this run."""
    extractor_id: str | None = None
    """Only entries proposed by this extractor."""
    produced_by_seq: int | None = None
    """Only entries produced by this journal entry."""
    include_superseded: bool = False
    """Also return entries that have been superseded."""
    limit: int | None = Field(default=None, ge=0)
    """At most this many rows (newest first)."""

    @classmethod
    def unverified_lessons(cls, **kw: Any) -> MemoryQuery:
        """A query for SI-1 lesson candidates (unverified lessons).

        Parameters
        ----------
        **kw : Any
            Other fields of the query (``run_id``, ``extractor_id``, ``limit``, ...).

        Returns
        -------
        MemoryQuery
            Unverified entries of kind ``lesson``.
        """
        return cls(trust=(Trust.unverified,), kinds=(EntryKind.lesson,), **kw)


class MemoryWrite(_Frozen):
    """Emitted once for every memory entry written."""

    type: Literal["memory_write"] = "memory_write"
    """Event tag."""
    entry_id: str
    """The entry written."""
    kind: EntryKind
    """Its kind."""
    trust: Trust
    """Its trust tier."""
    produced_by: LedgerRef
    """The journal entry that produced it."""
    run_id: str | None = None
    """The run that wrote it."""
    ts: datetime = Field(default_factory=utcnow)
    """When it was written."""


class PolicyWrite(_Frozen):
    """Emitted once for every policy record written."""

    type: Literal["policy_write"] = "policy_write"
    """Event tag."""
    record_id: str
    """The record written."""
    policy_id: str
    """The policy it is a version of."""
    target: PolicyTarget
    """The policy surface."""
    produced_by: LedgerRef
    """The signed journal entry behind it."""
    ts: datetime = Field(default_factory=utcnow)
    """When it was written."""


AgentEvent = Annotated[MemoryWrite | PolicyWrite, Field(discriminator="type")]
"""Events, a union keyed by ``type``."""


class Policy(_Frozen):
    """A typed, versioned policy object. Nothing in truss_lab applies it."""

    policy_id: str = Field(min_length=1)
    """Stable name of the policy (its versions share it)."""
    target: PolicyTarget
    """Which surface it tunes."""
    version: int = Field(default=1, ge=1)
    """1 for the first record of a policy, +1 for each superseding record."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The policy's values, e.g. ``{"extraction_min_salience": 0.72}``."""

    @field_validator("target", mode="before")
    @classmethod
    def _known_target(cls, v: object) -> PolicyTarget:
        # PolicyError is not a ValueError, so pydantic lets it through unwrapped:
        # the caller sees one clear governance error, not a validation dump.
        return PolicyTarget.parse(v)

    @field_validator("settings")
    @classmethod
    def _salience_in_range(cls, v: dict[str, Any], info: Any) -> dict[str, Any]:
        if "extraction_min_salience" in v:
            try:
                check_threshold(v["extraction_min_salience"], "policy settings")
            except ConfigError as exc:
                # A ValueError, so pydantic reports it as a ValidationError of ``settings``.
                raise ValueError(exc.message) from None
        return v


class PolicyRecord(_Frozen):
    """A governed policy record: the same trust/provenance shape as memory."""

    record_id: str
    """Stable id of this version."""
    policy: Policy
    """The policy value."""
    trust: Trust = Trust.unverified
    """Trust tier; proposals are unverified."""
    provenance: Provenance
    """``produced_by`` is the signed journal entry holding the proposal."""
    supersedes: str | None = None
    """The record this one replaces."""
    superseded_by: str | None = None
    """The record that replaced this one (``None`` for the current head)."""

    @property
    def created_at(self) -> datetime:
        return self.provenance.created_at

    @property
    def version(self) -> int:
        return self.policy.version

    @property
    def target(self) -> PolicyTarget:
        return self.policy.target
