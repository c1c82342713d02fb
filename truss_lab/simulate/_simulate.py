"""A seeded simulator of a recorded Truss deployment (FORMATS.md §1–§3).

:func:`simulate` writes a SYNTHETIC dataset: a signed journal of contract
verdicts, the keyring that verifies it, recorded extractor completions (with
the defects real model output has), gold labels from two noisy annotators and
the latent truth those labels were drawn from (``truth.csv``, which a real
dataset never has).

Determinism: every random draw comes from ``numpy.random.Generator(PCG64)``
streams derived from ``seed`` by ``SeedSequence``, and only through
``Generator.random()`` (uniform doubles, whose stream NumPy keeps stable);
normals, counts and choices are built from those uniforms here. No clock, no
set or hash ordering. Same seed and extractors → byte-identical files.

The verdicts use one stream, each extractor a stream keyed by the SHA-256 of
its name, so adding an extractor leaves the other extractors' data unchanged.

Run ``python -m truss_lab.simulate --out DIR --runs N --seed S``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..core._errors import BadInputError, TrussLabError
from ..journal._crypto import GENESIS_HASH, SigningKey, build_entry, save_keyring

__all__ = [
    "DEFAULT_EXTRACTORS",
    "EXTRACTOR_PROFILES",
    "GENERATOR_VERSION",
    "SIM_KEY_ID",
    "ExtractorProfile",
    "SimulationResult",
    "simulate",
    "simulation_key",
]

GENERATOR_VERSION = "truss_lab-sim-1"
SIM_KEY_ID = "truss-sim-operator-1"
BASE_TS = datetime(2026, 11, 1, tzinfo=UTC)
PROMPT_VERSION = "lesson-v1"
FILES = ("journal.jsonl", "keys.json", "completions.jsonl", "labels.csv", "truth.csv")

# ---------------------------------------------------------------------------
# Vocabulary. A check is (name, tag, short failure, pass evidence, fail
# evidence with {n}, specific lesson, vague lesson).
# ---------------------------------------------------------------------------

_DOMAINS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...] = (
    (
        "scheduler",
        ("Migrate the {obj} cron job to the new scheduler",
         "Move the {obj} job from crontab to the workflow scheduler"),
        ("billing", "invoice-reminder", "nightly-backup", "report-digest", "cache-warmup",
         "log-rotation"),
        (
            ("tz_regression", "dst", "timezone handling regressed",
             "fire times unchanged across the DST boundary",
             "02:00 UTC run fired at 03:00 after the DST change ({n} runs affected)",
             "When migrating cron jobs, pin schedules to UTC and test a run across a DST "
             "boundary before cutover.",
             "Be careful with time zones."),
            ("job_idempotency", "idempotency", "a retried run repeated side effects",
             "retrying a run twice produced no duplicate side effects",
             "retry after a timeout charged {n} accounts twice",
             "Make a scheduled job idempotent before enabling automatic retries; a retried "
             "run must not repeat its side effects.",
             "Retries can cause problems."),
            ("legacy_job_disabled", "cutover", "the legacy job kept running",
             "legacy crontab entry removed; one runner observed",
             "legacy crontab entry still active on {n} hosts; the job ran twice",
             "Disable the legacy cron entry in the same change that enables the new "
             "schedule, and check that exactly one runner fires.",
             "Clean up old jobs."),
            ("schedule_parity", "cron", "fire times differ from the legacy schedule",
             "next 30 fire times match the legacy crontab",
             "{n} of the next 30 fire times differ from the legacy crontab",
             "Compare the next N fire times of the old and new schedules to catch "
             "cron-expression translation errors.",
             "Check the schedule."),
            ("alerting_wired", "alerting", "failures do not alert",
             "forced failure paged the on-call channel",
             "no alert fired when the job was forced to fail ({n} min silence)",
             "Force one failure of a migrated job to prove its alerts reach on-call.",
             "Make sure alerts work."),
        ),
    ),
    (
        "api-integration",
        ("Integrate the {obj} API into the checkout service",
         "Replace the legacy {obj} client with the vendor's v2 API"),
        ("payments", "shipping-rates", "geocoding", "SMS", "CRM contacts", "tax-rates"),
        (
            ("auth_refresh", "auth", "tokens are not refreshed",
             "token refreshed 5 min before expiry in a 2 h soak",
             "token expired after 60 min and was not refreshed; {n} requests got 401",
             "Refresh OAuth tokens ahead of expiry and run a soak test longer than one "
             "token lifetime.",
             "Handle authentication properly."),
            ("rate_limit_backoff", "rate-limit", "no backoff on 429",
             "burst of 500 requests backed off and completed",
             "no backoff on HTTP 429; {n} requests dropped during a burst",
             "Honour Retry-After with capped exponential backoff and test against a burst "
             "above the vendor's rate limit.",
             "Watch out for rate limits."),
            ("pagination_complete", "pagination", "the client reads only the first page",
             "all pages read; record count matches the vendor dashboard",
             "client stopped after the first page; {n} records missing",
             "Follow pagination cursors until exhausted and compare the record count "
             "against the provider's total.",
             "Check all the data is fetched."),
            ("error_mapping", "errors", "provider errors surface as 500s",
             "vendor 4xx errors mapped to user-facing validation messages",
             "vendor 422 surfaced to users as a 500 in {n} sessions",
             "Map every documented provider error code to a user-facing error before "
             "launch; unmapped codes should fail closed with a clear message.",
             "Improve error handling."),
            ("contract_tests", "schema", "the response schema drifted",
             "recorded contract tests pass against the sandbox",
             "schema drift: {n} response fields renamed upstream",
             "Pin the provider's response schema with contract tests that run against "
             "the sandbox on every deploy.",
             "APIs can change."),
        ),
    ),
    (
        "data-pipeline",
        ("Backfill the {obj} table in the analytics warehouse",
         "Add the {obj} feed to the nightly ETL pipeline"),
        ("orders", "sessions", "refunds", "inventory", "clickstream", "ledger"),
        (
            ("row_count_parity", "parity", "target rows do not match the source",
             "row counts match the source within 0.01%",
             "target has {n} fewer rows than the source",
             "Reconcile row counts between source and target per partition, not only "
             "in total, before declaring a backfill done.",
             "Count the rows."),
            ("null_handling", "nulls", "rows with nulls were dropped",
             "null keys routed to the quarantine table",
             "{n} rows with a null customer_id dropped silently",
             "Route rows with null keys to a quarantine table and alert on its size "
             "instead of filtering them out.",
             "Nulls are tricky."),
            ("late_data", "late-data", "late events were excluded",
             "late events merged into the closed partition",
             "events arriving more than 1 h late were excluded ({n} events)",
             "Give daily partitions a lateness window and reprocess closed partitions "
             "when late events arrive.",
             "Data can arrive late."),
            ("dedup", "dedup", "a replay created duplicates",
             "replaying one hour of input produced no duplicates",
             "{n} duplicate events after replaying the input",
             "Deduplicate on a stable event id at the sink so replays are safe.",
             "Avoid duplicates."),
            ("schema_evolution", "schema", "a new column broke the loader",
             "added column propagated with a default",
             "new upstream column broke the loader for {n} batches",
             "Load with explicit column lists and test the pipeline against an upstream "
             "schema with an extra column.",
             "Schemas evolve."),
        ),
    ),
    (
        "refactor",
        ("Refactor the {obj} module into a separate package",
         "Split the {obj} service class into smaller components"),
        ("billing", "auth", "notifications", "search", "reporting", "checkout"),
        (
            ("tests_green", "tests", "tests fail after the refactor",
             "all 1,240 tests pass", "{n} tests failing after the extraction",
             "Move code in small commits that keep the full test suite green, rather "
             "than one large move followed by fixes.",
             "Run the tests."),
            ("public_api_unchanged", "api", "a public symbol was removed",
             "no public symbol removed (API diff empty)",
             "removed symbol still imported by {n} callers",
             "Diff the public API before and after a refactor and keep deprecated "
             "aliases for symbols that callers still import.",
             "Don't break callers."),
            ("perf_budget", "performance", "latency regressed",
             "p95 latency within 2% of baseline", "p95 latency up {n}% on the benchmark",
             "Run the performance benchmark before and after a refactor; an added "
             "indirection on a hot path shows up in p95 latency.",
             "Performance matters."),
            ("no_behavior_change", "golden", "outputs changed",
             "golden outputs identical on 500 cases",
             "golden output differs in {n} cases",
             "Record golden outputs before refactoring and diff them after; a refactor "
             "must not change behaviour.",
             "Keep behaviour the same."),
        ),
    ),
    (
        "deployment",
        ("Deploy {obj} 2.{n} to production",
         "Roll out the new {obj} release behind a canary"),
        ("gateway", "payments-api", "search-indexer", "auth-service", "notification-worker"),
        (
            ("health_checks", "health", "readiness probe failed",
             "all pods ready within 40 s", "readiness probe failed for {n} s after rollout",
             "Set readiness probes to the service's real warm-up time and watch them in "
             "a canary before a full rollout.",
             "Check health after deploying."),
            ("migration_order", "migrations", "schema migration ran after the new code",
             "migration applied before the code rollout",
             "new code ran before its schema migration; {n} errors in the window",
             "Apply backward-compatible schema migrations before the code that needs "
             "them, as a separate deploy step.",
             "Order matters in deployments."),
            ("rollback_tested", "rollback", "the rollback path is untested",
             "rollback rehearsed in staging in 3 min",
             "rollback script failed in the staging dry run after {n} min",
             "Rehearse the rollback in staging before every production deploy; an "
             "untested rollback is not a rollback.",
             "Have a rollback plan."),
            ("config_secrets", "secrets", "a secret is missing in production",
             "all referenced secrets resolved in the prod namespace",
             "{n} referenced secrets missing in the prod namespace",
             "Check that every secret the release references exists in the target "
             "namespace as a pre-deploy gate.",
             "Secrets need care."),
            ("canary_metrics", "canary", "the canary error rate rose",
             "canary error rate at baseline for 30 min",
             "canary error rate {n}x baseline",
             "Gate promotion on canary error rate against baseline with an automatic "
             "halt.",
             "Monitor the canary."),
        ),
    ),
    (
        "docs",
        ("Update the {obj} documentation for release 4.{n}",
         "Rewrite the {obj} getting-started guide"),
        ("CLI", "REST API", "SDK", "operator", "migration"),
        (
            ("links_valid", "links", "links are broken",
             "link checker found no broken links", "{n} broken links found by the checker",
             "Run a link checker in CI on documentation changes; moved pages break "
             "inbound links.",
             "Check links."),
            ("examples_run", "examples", "a code example does not run",
             "all code examples executed in CI", "{n} code examples raise errors when run",
             "Execute documentation code samples in CI so examples cannot drift from "
             "the API.",
             "Examples should work."),
            ("version_refs", "versions", "old version references remain",
             "no references to the previous version",
             "{n} references to the previous version remain",
             "Derive version strings in docs from one variable instead of editing them "
             "by hand.",
             "Keep versions up to date."),
            ("changelog_entry", "changelog", "the changelog entry is missing",
             "changelog entry present and linked",
             "changelog entry missing ({n} user-facing changes undocumented)",
             "Make a changelog entry a required part of any user-facing change.",
             "Update the changelog."),
        ),
    ),
    (
        "dependency-upgrade",
        ("Upgrade {obj} to the next major version",
         "Bump {obj} and fix the resulting breakage"),
        ("the ORM", "the web framework", "the HTTP client", "the test runner",
         "the serializer"),
        (
            ("lockfile_updated", "lockfile", "the lockfile is stale",
             "lockfile regenerated and committed",
             "lockfile still pins the old version in {n} environments",
             "Regenerate and commit the lockfile in the same change as the version "
             "bump, and build from the lockfile in CI.",
             "Keep dependencies in sync."),
            ("deprecations_clear", "deprecations", "deprecation warnings became errors",
             "no deprecation warnings in the test run",
             "{n} deprecation warnings are now errors",
             "Run the suite with deprecation warnings as errors on the old version "
             "first, so the upgrade itself is small.",
             "Fix warnings."),
            ("transitive_conflicts", "resolver", "transitive dependencies conflict",
             "resolver found a consistent set",
             "{n} transitive dependencies conflict with the new version",
             "Check the dependency tree for transitive pins before a major upgrade and "
             "upgrade the pinning packages first.",
             "Dependencies are complicated."),
            ("ci_matrix", "ci", "the CI matrix is out of date",
             "CI matrix covers all supported runtimes",
             "CI still tests {n} runtimes the new version no longer supports",
             "Update the CI matrix to the new version's supported runtimes in the same "
             "change.",
             "Keep CI updated."),
        ),
    ),
)

_GENERIC_LESSONS = (
    "Always write more tests before making changes.",
    "Communicate changes to the team early.",
    "Double-check the work before marking the contract complete.",
    "Read the documentation carefully.",
    "Plan ahead for complex tasks.",
    "Monitor the system after making changes.",
    "Break large tasks into smaller steps.",
    "Ask for a review before merging.",
    "Keep the code clean and readable.",
    "Document decisions as they are made.",
)
_PASS_NOTE = (
    "Running the {check} check kept this {domain} run uneventful; keep it in the "
    "contract template.",
    "The {check} check is cheap and caught nothing this time, but it should stay a "
    "standard step for {domain} contracts.",
)
_NEAR_DUP = (
    lambda t: t.rstrip("."),
    lambda t: "Remember: " + t[0].lower() + t[1:],
    lambda t: t.replace(" before ", " prior to ", 1) if " before " in t else t + " (important)",
    lambda t: "Lesson: " + t,
)
_PROSE_ONLY = (
    "I could not identify any durable lessons from this run.",
    "Here are the key lessons: the team should test more carefully and communicate "
    "better. Overall the contract went reasonably well.",
    "As an AI model I need more context about the checks to extract lessons.",
    "Lessons:\n1. Test thoroughly.\n2. Monitor after deploying.",
)
_PROSE_BEFORE = (
    "Here are the lessons I extracted from this verdict:\n\n",
    "Sure! Based on the failed checks, the durable lessons are:\n",
    "After reviewing the contract verdict, I found the following.\n\n",
)
_PROSE_AFTER = (
    "\n\nLet me know if you need more detail.",
    "\n\nThese lessons should help future runs.",
    "",
)
_SAL_STRINGS = ("high", "medium", "0.8", "very high")
_SAL_OUT = (1.3, 1.05, -0.1, 1.2, 2.0, -0.05, 10.0)

# Flattened check table (global check id → fields), domain → range of check ids.
_CHECKS = [c for d in _DOMAINS for c in d[3]]
_DOM_START = np.cumsum([0] + [len(d[3]) for d in _DOMAINS])[:-1]
_DOM_NCHK = np.array([len(d[3]) for d in _DOMAINS])
_MAX_CHK = int(_DOM_NCHK.max())

# Lesson kinds (order = order in a completion's lessons array).
K_SPECIFIC, K_VAGUE, K_PASS_NOTE, K_UNGROUNDED, K_GENERIC, K_EXACT_DUP, K_NEAR_DUP = range(7)
KIND_NAMES = ("grounded", "grounded_vague", "pass_note", "ungrounded", "generic",
              "duplicate", "near_duplicate")
# Latent usefulness on the logit scale per kind (mean, sd).
_P_LOGIT = ((1.1, 0.8), (-0.6, 0.8), (-1.0, 0.7), (-2.6, 0.6), (-1.9, 0.7),
            (-3.2, 0.5), (-2.8, 0.5))

# Completion text shapes.
T_PLAIN, T_FENCED, T_PROSE, T_TRUNCATED, T_PROSE_ONLY, T_EMPTY = range(6)
TEXT_NAMES = ("plain", "fenced", "prose_wrapped", "truncated", "prose_only", "empty")


@dataclass(frozen=True)
class ExtractorProfile:
    """How one simulated extractor behaves. Rates are per completion unless noted."""

    name: str
    model: str
    emit_rate: float = 0.9  # P(a failed check yields a lesson)
    specific_rate: float = 0.85  # P(a grounded lesson is specific rather than vague)
    generic_mean_fail: float = 0.3  # mean generic lessons on fail/partial verdicts
    generic_mean_pass: float = 0.04
    pass_note_rate: float = 0.1  # P(a pass verdict yields a pass note)
    ungrounded_rate: float = 0.03
    exact_dup_rate: float = 0.01
    near_dup_rate: float = 0.02
    sal_slope: float = 1.0  # salience = sigmoid(slope * logit(p) + shift + noise)
    sal_shift: float = 0.0
    sal_noise: float = 0.35
    unparseable_rate: float = 0.02
    fenced_rate: float = 0.03
    prose_rate: float = 0.02
    pretty_rate: float = 0.4  # P(JSON is indented)
    sal_missing_rate: float = 0.01  # per lesson
    sal_out_rate: float = 0.005  # per lesson
    sal_string_rate: float = 0.005  # per lesson
    bad_text_rate: float = 0.004  # per lesson: "" or null text
    evidence_missing_rate: float = 0.05  # per lesson
    latency_base_ms: float = 650.0
    latency_per_token_ms: float = 16.0


EXTRACTOR_PROFILES: dict[str, ExtractorProfile] = {
    "sim-good-v1": ExtractorProfile(name="sim-good-v1", model="sim-llm-70b-instruct"),
    "sim-overconfident-v1": ExtractorProfile(
        name="sim-overconfident-v1", model="sim-llm-8b-instruct",
        emit_rate=0.8, specific_rate=0.45, generic_mean_fail=1.0, generic_mean_pass=0.4,
        pass_note_rate=0.4, ungrounded_rate=0.12, exact_dup_rate=0.06, near_dup_rate=0.10,
        sal_slope=0.5, sal_shift=2.3, sal_noise=0.7, unparseable_rate=0.04,
        fenced_rate=0.10, prose_rate=0.06, pretty_rate=0.2, sal_missing_rate=0.02,
        sal_out_rate=0.04, sal_string_rate=0.02, bad_text_rate=0.01,
        evidence_missing_rate=0.15, latency_base_ms=240.0, latency_per_token_ms=7.0,
    ),
}
DEFAULT_EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1")


@dataclass(frozen=True)
class SimulationResult:
    """Paths of the files :func:`simulate` wrote, and what they hold.

    ``defects`` maps each extractor to counts of what is actually present:
    ``text:<shape>`` per completion shape (plain, fenced, prose_wrapped,
    truncated, prose_only, empty), and over the lessons of parseable
    completions ``lessons``, ``salience:missing|out_of_range|not_a_number|null``,
    ``lesson_text:empty|null`` and ``kind:duplicate|near_duplicate|ungrounded|generic``.
    """

    out_dir: Path
    journal: Path
    keys: Path
    completions: Path
    labels: Path
    truth: Path
    key_id: str
    n_verdicts: int
    n_completions: int
    n_unparseable: int
    n_lessons: int
    n_candidates: int
    n_labels: int
    verdicts: dict[str, int] = field(default_factory=dict)
    defects: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def files(self) -> dict[str, Path]:
        """File name → path of every data file written."""
        return {p.name: p for p in (self.journal, self.keys, self.completions, self.labels,
                                    self.truth)}


# ---------------------------------------------------------------------------
# Random helpers: everything from Generator.random() so the stream is stable.
# ---------------------------------------------------------------------------

def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def _name_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def _normal(rng: np.random.Generator, n: int) -> np.ndarray:
    # Box-Muller; 1 - u keeps the log argument in (0, 1].
    u1 = 1.0 - rng.random(n)
    u2 = rng.random(n)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def _poisson(rng: np.random.Generator, mean: np.ndarray, cap: int = 5) -> np.ndarray:
    # Inverse transform on a Poisson truncated at ``cap``.
    mean = np.asarray(mean, dtype=float)
    u = rng.random(mean.shape[0])
    k = np.zeros(mean.shape[0], dtype=np.int64)
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    for i in range(1, cap + 1):
        k += u >= cdf
        pmf = pmf * mean / i
        cdf = cdf + pmf
    return k


def _pick(rng: np.random.Generator, n_options: int | np.ndarray, n: int) -> np.ndarray:
    return np.floor(rng.random(n) * n_options).astype(np.int64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def simulation_key(seed: int) -> SigningKey:
    """The PUBLIC TEST signing key of a simulated dataset (derived from ``seed``; never real)."""
    digest = hashlib.sha256(f"truss_lab.simulate/test-key/{seed}".encode()).digest()
    return SigningKey.from_seed(SIM_KEY_ID, digest)


# ---------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------

@dataclass
class _Verdicts:
    domain: np.ndarray  # (V,)
    verdict: np.ndarray  # (V,) 0 pass, 1 partial, 2 fail
    chk: np.ndarray  # (V, MAX) global check ids, -1 padded, display order
    failed: np.ndarray  # (V, MAX) bool
    n_chk: np.ndarray
    n_failed: np.ndarray
    payloads: list[dict[str, Any]]
    ts: list[str]


_VERDICT_NAMES = ("pass", "partial", "fail")


def _make_verdicts(seed: int, runs: int) -> _Verdicts:
    rng = _stream(seed, 1)
    u = rng.random(runs)
    verdict = np.searchsorted(np.array([0.55, 0.75]), u, side="right")  # 55/20/25 %
    # A non-pass run is retried as the next run half of the time.
    retry = np.zeros(runs, dtype=bool)
    retry[1:] = (rng.random(runs - 1) < 0.5) & (verdict[:-1] != 0)
    contract = np.cumsum(~retry) - 1
    n_con = int(contract[-1]) + 1
    starts = np.flatnonzero(~retry)
    attempt = np.arange(runs) - starts[contract] + 1

    # Per contract: domain, goal template, object, checks (a random subset of the domain's).
    c_dom = _pick(rng, len(_DOMAINS), n_con)
    c_goal = _pick(rng, 2, n_con)
    c_obj = rng.random(n_con)
    c_num = 1 + _pick(rng, 9, n_con)
    c_nchk = np.minimum(2 + _pick(rng, 4, n_con), _DOM_NCHK[c_dom])
    keys = rng.random((n_con, _MAX_CHK))
    keys[np.arange(_MAX_CHK)[None, :] >= _DOM_NCHK[c_dom][:, None]] = np.inf
    rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
    c_sel = rank < c_nchk[:, None]  # (C, MAX) which of the domain's checks are in the contract

    dom = c_dom[contract]
    sel = c_sel[contract]
    n_chk = c_nchk[contract]
    # Which selected checks fail: a random order among the selected ones, the first k fail.
    fkeys = rng.random((runs, _MAX_CHK))
    fkeys[~sel] = np.inf
    frank = np.argsort(np.argsort(fkeys, axis=1, kind="stable"), axis=1, kind="stable")
    uf = rng.random(runs)
    k_fail = np.where(
        verdict == 2, 1 + np.floor(uf * n_chk),
        np.where(verdict == 1, 1 + np.floor(uf * (n_chk - 1)), 0),
    ).astype(np.int64)
    k_fail = np.minimum(k_fail, n_chk)
    failed_dom = sel & (frank < k_fail[:, None])
    # Compact to display order (domain order), padded with -1.
    order = np.argsort(~sel, axis=1, kind="stable")
    slot = np.take_along_axis(np.where(sel, np.arange(_MAX_CHK)[None, :], -1), order, axis=1)
    failed = np.take_along_axis(failed_dom, order, axis=1) & (slot >= 0)
    chk = np.where(slot >= 0, _DOM_START[dom][:, None] + slot, -1)
    ev_n = 2 + _pick(rng, 60, runs * _MAX_CHK).reshape(runs, _MAX_CHK)

    gaps = 1 + np.floor(-np.log(1.0 - rng.random(runs)) * 900.0).astype(np.int64)
    secs = np.cumsum(gaps)

    payloads: list[dict[str, Any]] = []
    ts: list[str] = []
    for i in range(runs):
        d = int(dom[i])
        ci = int(contract[i])
        name, goals, objs, _ = _DOMAINS[d]
        obj = objs[int(c_obj[ci] * len(objs))]
        goal = goals[int(c_goal[ci])].format(obj=obj, n=int(c_num[ci]))
        checks = []
        first_fail = None
        tags = [name]
        for j in range(int(n_chk[i])):
            g = int(chk[i, j])
            c = _CHECKS[g]
            if failed[i, j]:
                checks.append({"name": c[0], "passed": False,
                               "evidence": c[4].format(n=int(ev_n[i, j]))})
                if first_fail is None:
                    first_fail = c[2]
                if c[1] not in tags:
                    tags.append(c[1])
            else:
                checks.append({"name": c[0], "passed": True, "evidence": c[3]})
        v = int(verdict[i])
        nf = int(failed[i].sum())
        if v == 0:
            summary = f"Done: all {len(checks)} checks passed"
        elif v == 1:
            summary = (f"Goal mostly met but {first_fail}; {nf} of {len(checks)} "
                       "checks failed")
        else:
            summary = f"Goal not met: {first_fail}; {nf} of {len(checks)} checks failed"
        if attempt[i] > 1:
            tags.append("retry")
        payloads.append({
            "contract_id": f"c-{ci + 1:05d}",
            "run_id": f"r-{ci + 1:05d}-{int(attempt[i])}",
            "goal": goal,
            "verdict": _VERDICT_NAMES[v],
            "summary": summary,
            "checks": checks,
            "tags": tags[:4],
        })
        ts.append((BASE_TS + timedelta(seconds=int(secs[i]))).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _Verdicts(dom, verdict, chk, failed, n_chk, failed.sum(axis=1), payloads, ts)


# ---------------------------------------------------------------------------
# Completions
# ---------------------------------------------------------------------------

@dataclass
class _Completions:
    lines: list[str]  # one per verdict
    text_kind: np.ndarray  # (V,)
    # Per lesson (flat, in completion order then lesson index):
    comp: np.ndarray
    index: np.ndarray
    kind: np.ndarray
    p_useful: np.ndarray
    useful: np.ndarray
    candidate: np.ndarray  # labelled: parseable completion and non-empty string text
    sal_defect: np.ndarray  # 0 ok, 1 missing, 2 out of range, 3 string, 4 null
    text_defect: np.ndarray  # 0 ok, 1 empty, 2 null
    salience: np.ndarray


def _make_completions(
    seed: int, prof: ExtractorProfile, v: _Verdicts, hashes: list[str],
) -> _Completions:
    rng = _stream(seed, 2, _name_key(prof.name))
    runs = v.verdict.shape[0]
    is_pass = v.verdict == 0

    # Grounded lessons: one per failed check with prob emit_rate (flat over failed checks).
    fv, fj = np.nonzero(v.failed)
    keep = rng.random(fv.shape[0]) < prof.emit_rate
    g_comp, g_chk = fv[keep], v.chk[fv[keep], fj[keep]]
    g_kind = np.where(rng.random(g_comp.shape[0]) < prof.specific_rate, K_SPECIFIC, K_VAGUE)
    # Pass notes cite one of the (passed) checks of a pass verdict.
    pn = is_pass & (rng.random(runs) < prof.pass_note_rate)
    pn_comp = np.flatnonzero(pn)
    pn_slot = _pick(rng, v.n_chk[pn_comp], pn_comp.shape[0])
    pn_chk = v.chk[pn_comp, pn_slot]
    # Ungrounded: cites a check of another domain.
    ug_comp = np.flatnonzero(~is_pass & (rng.random(runs) < prof.ungrounded_rate))
    other = (v.domain[ug_comp] + 1 + _pick(rng, len(_DOMAINS) - 1, ug_comp.shape[0])) % len(
        _DOMAINS)
    ug_chk = _DOM_START[other] + _pick(rng, _DOM_NCHK[other], ug_comp.shape[0])
    # Generic platitudes.
    n_gen = _poisson(rng, np.where(is_pass, prof.generic_mean_pass, prof.generic_mean_fail))
    gen_comp = np.repeat(np.arange(runs), n_gen)
    gen_tpl = _pick(rng, len(_GENERIC_LESSONS), gen_comp.shape[0])

    comp = np.concatenate([g_comp, pn_comp, ug_comp, gen_comp])
    kind = np.concatenate([g_kind, np.full(pn_comp.shape[0], K_PASS_NOTE),
                           np.full(ug_comp.shape[0], K_UNGROUNDED),
                           np.full(gen_comp.shape[0], K_GENERIC)])
    ref = np.concatenate([g_chk, pn_chk, ug_chk, gen_tpl])  # check id, or template index
    # Stable sort by completion keeps kind order within a completion.
    o = np.argsort(comp, kind="stable")
    comp, kind, ref = comp[o], kind[o], ref[o]
    n_base = np.bincount(comp, minlength=runs)

    # At most one duplicate per completion, of a random earlier lesson.
    ud = rng.random(runs)
    dup_kind = np.where(ud < prof.exact_dup_rate, K_EXACT_DUP,
                        np.where(ud < prof.exact_dup_rate + prof.near_dup_rate, K_NEAR_DUP, -1))
    dup_kind[n_base == 0] = -1
    d_comp = np.flatnonzero(dup_kind >= 0)
    base_start = np.concatenate([[0], np.cumsum(n_base)[:-1]])
    d_src = base_start[d_comp] + _pick(rng, n_base[d_comp], d_comp.shape[0])
    d_var = _pick(rng, len(_NEAR_DUP), d_comp.shape[0])

    # Latent usefulness and salience for base lessons, then duplicates copy their source.
    mu = np.array([m for m, _ in _P_LOGIT])[kind]
    sd = np.array([s for _, s in _P_LOGIT])[kind]
    logit_p = mu + sd * _normal(rng, kind.shape[0])
    sal = _sigmoid(prof.sal_slope * logit_p + prof.sal_shift
                   + prof.sal_noise * _normal(rng, kind.shape[0]))
    d_kind = dup_kind[d_comp]
    d_logit = np.array([m for m, _ in _P_LOGIT])[d_kind] + 0.5 * _normal(rng, d_comp.shape[0])
    d_sal = np.clip(sal[d_src] + np.where(d_kind == K_NEAR_DUP, 0.05, 0.0)
                    * _normal(rng, d_comp.shape[0]), 0.0, 1.0)

    comp = np.concatenate([comp, d_comp])
    kind = np.concatenate([kind, d_kind])
    ref = np.concatenate([ref, d_src])  # for duplicates: flat index of the source lesson
    logit_p = np.concatenate([logit_p, d_logit])
    sal = np.concatenate([sal, d_sal])
    dvar = np.concatenate([np.full(n_base.sum(), -1), d_var])
    o = np.argsort(comp, kind="stable")
    comp, kind, ref, logit_p, sal, dvar = comp[o], kind[o], ref[o], logit_p[o], sal[o], dvar[o]
    # A duplicate's source index was a position before this sort: map it to the new one.
    new_pos = np.empty_like(o)
    new_pos[o] = np.arange(o.shape[0])
    is_dup = (kind == K_EXACT_DUP) | (kind == K_NEAR_DUP)
    ref[is_dup] = new_pos[ref[is_dup]]
    n_les = np.bincount(comp, minlength=runs)
    starts = np.concatenate([[0], np.cumsum(n_les)[:-1]])
    index = np.arange(comp.shape[0]) - starts[comp]
    sal = np.round(sal, 2)
    p_useful = _sigmoid(logit_p)
    n = comp.shape[0]
    useful = rng.random(n) < p_useful

    # Per-lesson defects.
    us = rng.random(n)
    sal_defect = np.select(
        [us < prof.sal_missing_rate, us < prof.sal_missing_rate + prof.sal_out_rate,
         us < prof.sal_missing_rate + prof.sal_out_rate + prof.sal_string_rate], [1, 2, 3], 0)
    sal_pick = _pick(rng, len(_SAL_OUT) * (len(_SAL_STRINGS) + 1), n)
    # One in five non-numeric saliences is a JSON null rather than a string.
    sal_defect[(sal_defect == 3) & (sal_pick % (len(_SAL_STRINGS) + 1) == len(_SAL_STRINGS))] = 4
    ut = rng.random(n)
    text_defect = np.where(ut < prof.bad_text_rate / 2, 2, np.where(ut < prof.bad_text_rate, 1, 0))
    text_defect[kind == K_EXACT_DUP] = 0  # a duplicate repeats its source verbatim
    ev_missing = rng.random(n) < prof.evidence_missing_rate
    tpl = _pick(rng, len(_PASS_NOTE), n)

    # Per-completion shape.
    uc = rng.random(runs)
    r1 = prof.unparseable_rate
    text_kind = np.select(
        [uc < r1 * 0.5, uc < r1 * 0.8, uc < r1,
         uc < r1 + prof.fenced_rate, uc < r1 + prof.fenced_rate + prof.prose_rate],
        [T_TRUNCATED, T_PROSE_ONLY, T_EMPTY, T_FENCED, T_PROSE], T_PLAIN)
    text_kind[(text_kind == T_TRUNCATED) & (n_les == 0)] = T_PROSE_ONLY
    pretty = rng.random(runs) < prof.pretty_rate
    cut = rng.random(runs)
    wrap = _pick(rng, len(_PROSE_BEFORE) * len(_PROSE_AFTER) * len(_PROSE_ONLY), runs)
    tok_noise = _normal(rng, runs)
    lat_noise = _normal(rng, runs)

    # Text of every lesson (duplicates resolved after their sources, which come first).
    texts: list[Any] = [None] * n
    evid: list[list[str]] = [[]] * n
    kind_l, ref_l, comp_l = kind.tolist(), ref.tolist(), comp.tolist()
    for i in range(n):
        k = kind_l[i]
        r = ref_l[i]
        if k in (K_SPECIFIC, K_VAGUE, K_UNGROUNDED):
            c = _CHECKS[r]
            texts[i] = c[5] if k != K_VAGUE else c[6]
            evid[i] = ["check:" + c[0]]
        elif k == K_PASS_NOTE:
            c = _CHECKS[r]
            dname = _DOMAINS[int(v.domain[comp_l[i]])][0]
            texts[i] = _PASS_NOTE[int(tpl[i])].format(check=c[0], domain=dname)
            evid[i] = ["check:" + c[0]]
        elif k == K_GENERIC:
            texts[i] = _GENERIC_LESSONS[r]
        else:
            src_text = texts[r] if isinstance(texts[r], str) and texts[r] else "Test more."
            texts[i] = src_text if k == K_EXACT_DUP else _NEAR_DUP[int(dvar[i])](src_text)
            evid[i] = evid[r]
        if text_defect[i] == 1:
            texts[i] = ""
        elif text_defect[i] == 2:
            texts[i] = None

    sal_l = sal.tolist()
    sd_l = sal_defect.tolist()
    sp_l = sal_pick.tolist()
    lessons: list[dict[str, Any]] = []
    for i in range(n):
        les: dict[str, Any] = {"text": texts[i]}
        d = sd_l[i]
        if d == 0:
            les["salience"] = sal_l[i]
        elif d == 2:
            les["salience"] = _SAL_OUT[sp_l[i] % len(_SAL_OUT)]
        elif d == 3:
            les["salience"] = _SAL_STRINGS[sp_l[i] % (len(_SAL_STRINGS) + 1)]
        elif d == 4:
            les["salience"] = None
        if not ev_missing[i]:
            les["evidence"] = evid[i]
        lessons.append(les)

    lines: list[str] = []
    n_les_l = n_les.tolist()
    starts_l = starts.tolist()
    for ci in range(runs):
        body = {"lessons": lessons[starts_l[ci]:starts_l[ci] + n_les_l[ci]]}
        js = json.dumps(body, ensure_ascii=False, indent=2 if pretty[ci] else None)
        tk = int(text_kind[ci])
        w = int(wrap[ci])
        if tk == T_FENCED:
            text = "```json\n" + js + "\n```"
        elif tk == T_PROSE:
            text = (_PROSE_BEFORE[w % len(_PROSE_BEFORE)] + js
                    + _PROSE_AFTER[(w // len(_PROSE_BEFORE)) % len(_PROSE_AFTER)])
        elif tk == T_TRUNCATED:
            # Cut before the closing "]}" so no brace-matching trick can repair it.
            text = js[: 10 + int(cut[ci] * (len(js) - 14))]
        elif tk == T_PROSE_ONLY:
            text = _PROSE_ONLY[w % len(_PROSE_ONLY)]
        elif tk == T_EMPTY:
            text = ""
        else:
            text = js
        prompt_tokens = 380 + len(json.dumps(v.payloads[ci])) // 4 + int(abs(tok_noise[ci]) * 8)
        completion_tokens = max(1, len(text) // 4)
        latency = int(
            (prof.latency_base_ms + prof.latency_per_token_ms * completion_tokens)
            * float(np.exp(0.25 * lat_noise[ci]))
        )
        rec = {
            "verdict_hash": hashes[ci],
            "extractor": prof.name,
            "model": prof.model,
            "prompt_version": PROMPT_VERSION,
            "request_hash": None,
            "text": text,
            "latency_ms": latency,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
        }
        lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))

    parseable = np.isin(text_kind, (T_PLAIN, T_FENCED, T_PROSE))
    candidate = parseable[comp] & (text_defect == 0)
    return _Completions(lines, text_kind, comp, index, kind, p_useful, useful, candidate,
                        sal_defect, text_defect, sal)


# ---------------------------------------------------------------------------
# Orchestration
# ---------------------------------------------------------------------------

def _resolve(extractors: Sequence[str | ExtractorProfile]) -> list[ExtractorProfile]:
    if isinstance(extractors, str | ExtractorProfile):
        extractors = [extractors]
    out: list[ExtractorProfile] = []
    for i, e in enumerate(extractors):
        if isinstance(e, ExtractorProfile):
            out.append(e)
        elif e in EXTRACTOR_PROFILES:
            out.append(EXTRACTOR_PROFILES[e])
        else:
            raise BadInputError(
                f"unknown extractor {e!r}; expected one of {sorted(EXTRACTOR_PROFILES)} "
                "or an ExtractorProfile", field=f"extractors[{i}]")
    names = [p.name for p in out]
    if not out:
        raise BadInputError("at least one extractor is needed", field="extractors")
    if len(set(names)) != len(names):
        raise BadInputError(f"extractor names must be unique, got {names}", field="extractors")
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)


def simulate(
    out_dir: str | os.PathLike[str],
    *,
    runs: int,
    seed: int,
    extractors: Sequence[str | ExtractorProfile] = DEFAULT_EXTRACTORS,
) -> SimulationResult:
    """Write a synthetic dataset (journal, keys, completions, labels, truth) to ``out_dir``.

    ``runs`` contract verdicts are signed with the public test key
    :func:`simulation_key`; each extractor answers every verdict once. The same
    ``seed`` and extractors give byte-identical files. Existing files of the
    same names are replaced; other files in ``out_dir`` are left alone.
    """
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise BadInputError(f"runs must be a positive integer, got {runs!r}", field="runs")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise BadInputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    runs, seed = int(runs), int(seed)
    profiles = _resolve(extractors)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create output directory ({exc})", source=str(out)) from None

    v = _make_verdicts(seed, runs)
    key = simulation_key(seed)
    prev = GENESIS_HASH
    hashes: list[str] = []
    jlines: list[str] = []
    for i in range(runs):
        e = build_entry(i + 1, "contract_verdict", v.payloads[i], key, prev, v.ts[i])
        prev = e["hash"]
        hashes.append(prev)
        jlines.append(json.dumps(e, ensure_ascii=False, separators=(",", ":")))

    comps = [_make_completions(seed, p, v, hashes) for p in profiles]
    n_ext = len(profiles)
    clines = [comps[k].lines[i] for i in range(runs) for k in range(n_ext)]

    # Labels and truth, ordered by verdict, extractor, lesson index, annotator.
    h_arr = np.array(hashes)
    lab_parts, truth_parts = [], []
    defects: dict[str, dict[str, int]] = {}
    n_lessons = n_cand = 0
    rng_lab = _stream(seed, 3)
    for k, c in enumerate(comps):
        m = c.candidate
        vi, li = c.comp[m], c.index[m]
        pu, ut = c.p_useful[m], c.useful[m]
        nc = int(m.sum())
        n_cand += nc
        n_lessons += int(np.isin(c.text_kind, (T_PLAIN, T_FENCED, T_PROSE))[c.comp].sum())
        # Annotator noise is largest where the truth is least clear-cut (p near 0.5).
        flip_a = rng_lab.random(nc) < 0.03 + 0.3 * pu * (1 - pu)
        flip_b = rng_lab.random(nc) < 0.05 + 0.4 * pu * (1 - pu)
        has_b = rng_lab.random(nc) < 0.4
        ya = (ut ^ flip_a).astype(np.int64)
        yb = (ut ^ flip_b).astype(np.int64)
        lab_parts.append((np.concatenate([vi, vi[has_b]]), np.full(nc + int(has_b.sum()), k),
                          np.concatenate([li, li[has_b]]), np.concatenate([ya, yb[has_b]]),
                          np.concatenate([np.zeros(nc, int), np.ones(int(has_b.sum()), int)])))
        truth_parts.append((vi, np.full(nc, k), li, pu, ut.astype(np.int64), c.kind[m]))
        # Lesson-level counts cover only lessons a reader can see (parseable completions).
        seen = np.isin(c.text_kind, (T_PLAIN, T_FENCED, T_PROSE))[c.comp]
        counts = {f"text:{TEXT_NAMES[t]}": int((c.text_kind == t).sum())
                  for t in range(len(TEXT_NAMES))}
        counts["lessons"] = int(seen.sum())
        for name, code, arr in (("salience:missing", 1, c.sal_defect),
                                ("salience:out_of_range", 2, c.sal_defect),
                                ("salience:not_a_number", 3, c.sal_defect),
                                ("salience:null", 4, c.sal_defect),
                                ("lesson_text:empty", 1, c.text_defect),
                                ("lesson_text:null", 2, c.text_defect)):
            counts[name] = int(((arr == code) & seen).sum())
        for kk in (K_UNGROUNDED, K_EXACT_DUP, K_NEAR_DUP, K_GENERIC):
            counts[f"kind:{KIND_NAMES[kk]}"] = int(((c.kind == kk) & seen).sum())
        defects[profiles[k].name] = dict(sorted(counts.items()))

    vi, ki, li, y, ann = (np.concatenate(a) for a in zip(*lab_parts, strict=True))
    o = np.lexsort((ann, li, ki, vi))
    names = np.array([p.name for p in profiles])
    ann_names = np.array(["ann-a", "ann-b"])
    lab_rows = [",".join(r) for r in zip(h_arr[vi[o]], names[ki[o]], li[o].astype(str),
                                         y[o].astype(str), ann_names[ann[o]], strict=True)]
    tvi, tki, tli, tpu, tut, tkind = (np.concatenate(a) for a in zip(*truth_parts, strict=True))
    o = np.lexsort((tli, tki, tvi))
    kind_names = np.array(KIND_NAMES)
    truth_rows = [",".join(r) for r in zip(
        h_arr[tvi[o]], names[tki[o]], tli[o].astype(str),
        np.char.mod("%.4f", tpu[o]), tut[o].astype(str), kind_names[tkind[o]], strict=True)]

    paths = {n: out / n for n in FILES}
    _write(paths["journal.jsonl"], "\n".join(jlines) + "\n")
    save_keyring({key.key_id: key.public_key}, paths["keys.json"])
    _write(paths["completions.jsonl"], "\n".join(clines) + "\n")
    _write(paths["labels.csv"], "verdict_hash,extractor,lesson_index,useful,annotator\n"
           + "".join(r + "\n" for r in lab_rows))
    _write(paths["truth.csv"], "verdict_hash,extractor,lesson_index,p_useful,useful_true,"
           "lesson_kind\n" + "".join(r + "\n" for r in truth_rows))

    n_unparseable = sum(int(np.isin(c.text_kind, (T_TRUNCATED, T_PROSE_ONLY, T_EMPTY)).sum())
                        for c in comps)
    return SimulationResult(
        out_dir=out,
        journal=paths["journal.jsonl"],
        keys=paths["keys.json"],
        completions=paths["completions.jsonl"],
        labels=paths["labels.csv"],
        truth=paths["truth.csv"],
        key_id=key.key_id,
        n_verdicts=runs,
        n_completions=len(clines),
        n_unparseable=n_unparseable,
        n_lessons=n_lessons,
        n_candidates=n_cand,
        n_labels=len(lab_rows),
        verdicts={name: int((v.verdict == i).sum()) for i, name in enumerate(_VERDICT_NAMES)},
        defects=defects,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m truss_lab.simulate --out DIR --runs N --seed S``."""
    ap = argparse.ArgumentParser(prog="python -m truss_lab.simulate",
                                 description="Write a seeded synthetic truss_lab dataset.")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--runs", type=int, default=2000, help="number of contract verdicts")
    ap.add_argument("--seed", type=int, default=7, help="random seed")
    ap.add_argument("--extractor", action="append", dest="extractors",
                    help=f"extractor profile (repeatable; default {' '.join(DEFAULT_EXTRACTORS)})")
    args = ap.parse_args(argv)
    try:
        res = simulate(args.out, runs=args.runs, seed=args.seed,
                       extractors=args.extractors or DEFAULT_EXTRACTORS)
    except TrussLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({
        "out_dir": str(res.out_dir), "verdicts": res.verdicts,
        "completions": res.n_completions, "unparseable": res.n_unparseable,
        "lessons": res.n_lessons, "candidates": res.n_candidates, "labels": res.n_labels,
        "defects": res.defects,
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
