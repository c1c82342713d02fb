"""Simulated extractor completions, and a simulated model behind an OpenAI-compatible server.

Simulated extractor completions: the lessons each extractor proposes, as model text.

An :class:`ExtractorProfile` sets how often an extractor emits each kind of
lesson (grounded, vague, pass note, ungrounded, generic, duplicate) and each
defect real model output has (fenced or prose-wrapped JSON, truncation, bad
salience, missing evidence). Each extractor draws from its own stream keyed
by its name, so adding an extractor leaves the others' data unchanged.

Grounded lessons are worded by ``lesson_text`` with the verdict's specifics, in the
extractor's own :class:`~._words.Voice` (which of the check's wordings, synonym sets,
hedges); a paraphrasing profile rewords them (light or heavy), shuffles their order
and, in a heavy paraphrase, often cites other evidence tokens (``summary``, ``goal``)
than the check. The wording draws come from a stream of their own (the extractor's
name, sub-key 1), so they never move a salience, a defect or a label.
Besides the text, :class:`Completions` keeps what each lesson says
(``meaning``), which reference of its verdict it expresses (``ref_rank``) and
its paraphrase level: the lesson-level truth.

A simulated model behind an OpenAI-compatible server, for the structured-output question.

:func:`structured_output_reply` answers a chat-completions request body the
way a model under constrained decoding would: with ``response_format``
``json_schema`` the text always fits the lessons schema (the server only lets
schema-valid tokens through); with ``json_object`` it is always JSON, but in a
share ``malformed_rate`` of prompts the wrong shape (``{"lesson": …}``: JSON
constrains the syntax, not the schema); without ``response_format`` that same
share is malformed text — truncated JSON, prose without JSON, or JSON with a
trailing comma — as free decoding gives. Which prompts misbehave is a
deterministic function of the messages (and ``seed``), so a run and its replay,
or the two arms of a comparison, see the same prompts fail.

Serve it with ``tests/builders/http_server.ScriptedServer(responder=...)``;
``scripts/measure_parse_failures.py`` measures the parse-failure rate of each arm.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ._verdicts import Verdicts
from ._words import (
    CHECKS,
    DOM_NCHK,
    DOM_START,
    DOMAINS,
    GENERIC_LESSONS,
    N_SYNONYMS,
    N_VOICE,
    NEAR_DUP,
    PASS_NOTES,
    PROSE_AFTER,
    PROSE_BEFORE,
    PROSE_ONLY,
    SAL_OUT,
    SAL_STRINGS,
    Seed,
    Voice,
    heavy_paraphrase,
    lesson_text,
    light_paraphrase,
    name_key,
    normal,
    pick,
    poisson,
    sigmoid,
    stream,
)

__all__ = [
    "DEFAULT_EXTRACTORS",
    "EXTRACTOR_PROFILES",
    "KIND_NAMES",
    "OWN_VOICE",
    "PARSEABLE",
    "PROMPT_VERSION",
    "TEXT_NAMES",
    "UNPARSEABLE",
    "Completions",
    "ExtractorProfile",
    "make_completions",
    "structured_output_reply",
]


PROMPT_VERSION = "lesson-v1"

# Lesson kinds (order = order in a completion's lessons array).
K_SPECIFIC, K_VAGUE, K_PASS_NOTE, K_UNGROUNDED, K_GENERIC, K_EXACT_DUP, K_NEAR_DUP = range(7)
KIND_NAMES = ("grounded", "grounded_vague", "pass_note", "ungrounded", "generic",
              "duplicate", "near_duplicate")
# Latent usefulness on the logit scale per kind (mean, sd).
_P_LOGIT = ((1.1, 0.8), (-0.6, 0.8), (-1.0, 0.7), (-2.6, 0.6), (-1.9, 0.7),
            (-3.2, 0.5), (-2.8, 0.5))

#: The sd of the noise (logit scale) around the reversed salience of an extractor's
#: lessons on its ``reversed_domain``.
REVERSED_SALIENCE_SD = 0.5

# Completion text shapes.
T_PLAIN, T_FENCED, T_PROSE, T_TRUNCATED, T_PROSE_ONLY, T_EMPTY = range(6)
TEXT_NAMES = ("plain", "fenced", "prose_wrapped", "truncated", "prose_only", "empty")
PARSEABLE = (T_PLAIN, T_FENCED, T_PROSE)  # shapes whose lessons a parser can read
UNPARSEABLE = (T_TRUNCATED, T_PROSE_ONLY, T_EMPTY)


#: An extractor's own wording: mostly another wording of the check than the canonical
#: one, a third of the synonym sets, seldom a hedge.
OWN_VOICE = Voice(variant=0.6, sets=0.3, hedge=0.1)


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
    synonym_rate: float = 0.1  # share of the synonyms its own wording swaps in
    voice: Voice = OWN_VOICE  # its own wording (_words)
    paraphrase: bool = False  # rewords its grounded lessons and shuffles their order
    heavy_rate: float = 0.4  # P(a paraphrase is heavy rather than light)
    labelled: bool = True  # whether the simulated annotators label its lessons
    # The slice effect: on the verdicts of this domain (its tag, e.g. "deployment") the
    # salience is reversed on the logit scale (with noise of sd REVERSED_SALIENCE_SD from
    # a stream of its own), so the extractor is much worse there at any one threshold;
    # None (every profile's default): no such effect. simulate(slice_effect=) sets it on
    # the first extractor; the bundled sample is made with "deployment".
    reversed_domain: str | None = None


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
        synonym_rate=0.2,
    ),
    # The good extractor's lessons reworded (light or heavy paraphrase, shuffled
    # order), a little more junk, and no labels: scored only through references.
    "sim-paraphrase-v1": ExtractorProfile(
        name="sim-paraphrase-v1", model="sim-llm-34b-instruct",
        generic_mean_fail=0.5, generic_mean_pass=0.08, pass_note_rate=0.15,
        ungrounded_rate=0.05, exact_dup_rate=0.03, near_dup_rate=0.05, sal_noise=0.45,
        latency_base_ms=420.0, latency_per_token_ms=11.0,
        paraphrase=True, heavy_rate=0.4, labelled=False,
    ),
}
DEFAULT_EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1")


@dataclass
class Completions:
    """One extractor's completions (one line per verdict) and what its lessons are."""

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
    meaning: list[str]  # equal keys say the same thing (a duplicate keeps its source's)
    ref_rank: np.ndarray  # k > 0: expresses its verdict's reference r<k>; 0: none
    paraphrase: np.ndarray  # 0 own wording, 1 light, 2 heavy paraphrase
    has_evidence: np.ndarray  # the lesson carries a non-empty evidence list


# Evidence a paraphrase cites for a grounded lesson, by cumulative probability: a light
# one sometimes adds the summary; a heavy one often cites the summary or the goal instead
# of the check (matchers damp a lesson whose evidence shares nothing with a reference's).
_LIGHT_EVIDENCE = ((0.85, ("check",)), (1.0, ("check", "summary")))
_HEAVY_EVIDENCE = ((0.35, ("check",)), (0.6, ("summary",)), (0.8, ("check", "summary")),
                   (1.0, ("goal", "summary")))


def _paraphrase_evidence(check: str, u: float, heavy: bool) -> list[str]:
    table = _HEAVY_EVIDENCE if heavy else _LIGHT_EVIDENCE
    tokens = next(t for p, t in table if u < p)
    return ["check:" + check if t == "check" else t for t in tokens]


class _Wording(NamedTuple):
    """The uniforms that word the lessons (drawn in :func:`make_completions`)."""

    u_frame: np.ndarray
    u_syn: np.ndarray
    ug_n: np.ndarray
    u_para: np.ndarray | None
    u_syn2: np.ndarray | None
    u_frame2: np.ndarray | None
    tpl: np.ndarray
    dvar: np.ndarray
    u_voice: np.ndarray  # (n, N_VOICE): the extractor's own voice
    u_voice2: np.ndarray | None  # (n, N_VOICE): the paraphrase's voice
    u_ev: np.ndarray | None  # the paraphrase's evidence tokens


def make_completions(
    seed: Seed, prof: ExtractorProfile, v: Verdicts, hashes: list[str],
) -> Completions:
    """The completion of extractor ``prof`` for every verdict of ``v`` (``hashes`` in order).

    Long because it is the extractor's one stream of draws, in the order they are made:
    that order fixes the dataset's bytes (the bundled sample is regenerated and compared in
    the tests), so the draws read top to bottom here and the work that draws nothing (the
    wording, the completion lines) is in helpers."""
    rng = stream(seed, 2, name_key(prof.name))
    runs = v.verdict.shape[0]
    is_pass = v.verdict == 0

    # Grounded lessons: one per failed check with prob emit_rate (flat over failed checks).
    fv, fj = np.nonzero(v.failed)
    keep = rng.random(fv.shape[0]) < prof.emit_rate
    g_comp, g_chk, g_slot = fv[keep], v.chk[fv[keep], fj[keep]], fj[keep]
    g_kind = np.where(rng.random(g_comp.shape[0]) < prof.specific_rate, K_SPECIFIC, K_VAGUE)
    # Pass notes cite one of the (passed) checks of a pass verdict.
    pn = is_pass & (rng.random(runs) < prof.pass_note_rate)
    pn_comp = np.flatnonzero(pn)
    pn_slot = pick(rng, v.n_chk[pn_comp], pn_comp.shape[0])
    pn_chk = v.chk[pn_comp, pn_slot]
    # Ungrounded: cites a check of another domain.
    ug_comp = np.flatnonzero(~is_pass & (rng.random(runs) < prof.ungrounded_rate))
    other = (v.domain[ug_comp] + 1 + pick(rng, len(DOMAINS) - 1, ug_comp.shape[0])) % len(
        DOMAINS)
    ug_chk = DOM_START[other] + pick(rng, DOM_NCHK[other], ug_comp.shape[0])
    # Generic platitudes.
    n_gen = poisson(rng, np.where(is_pass, prof.generic_mean_pass, prof.generic_mean_fail))
    gen_comp = np.repeat(np.arange(runs), n_gen)
    gen_tpl = pick(rng, len(GENERIC_LESSONS), gen_comp.shape[0])

    comp = np.concatenate([g_comp, pn_comp, ug_comp, gen_comp])
    kind = np.concatenate([g_kind, np.full(pn_comp.shape[0], K_PASS_NOTE),
                           np.full(ug_comp.shape[0], K_UNGROUNDED),
                           np.full(gen_comp.shape[0], K_GENERIC)])
    ref = np.concatenate([g_chk, pn_chk, ug_chk, gen_tpl])  # check id, or template index
    slot = np.concatenate([g_slot, pn_slot, np.full(ug_comp.shape[0] + gen_comp.shape[0], -1)])
    # Stable sort by completion keeps kind order within a completion; a
    # paraphrasing extractor shuffles its lessons instead.
    if prof.paraphrase:
        o = np.lexsort((rng.random(comp.shape[0]), comp))
    else:
        o = np.argsort(comp, kind="stable")
    comp, kind, ref, slot = comp[o], kind[o], ref[o], slot[o]
    n_base = np.bincount(comp, minlength=runs)

    # At most one duplicate per completion, of a random earlier lesson.
    ud = rng.random(runs)
    dup_kind = np.where(ud < prof.exact_dup_rate, K_EXACT_DUP,
                        np.where(ud < prof.exact_dup_rate + prof.near_dup_rate, K_NEAR_DUP, -1))
    dup_kind[n_base == 0] = -1
    d_comp = np.flatnonzero(dup_kind >= 0)
    base_start = np.concatenate([[0], np.cumsum(n_base)[:-1]])
    d_src = base_start[d_comp] + pick(rng, n_base[d_comp], d_comp.shape[0])
    d_var = pick(rng, len(NEAR_DUP), d_comp.shape[0])

    # Latent usefulness and salience for base lessons, then duplicates copy their source.
    mu = np.array([m for m, _ in _P_LOGIT])[kind]
    sd = np.array([s for _, s in _P_LOGIT])[kind]
    logit_p = mu + sd * normal(rng, kind.shape[0])
    sal = sigmoid(prof.sal_slope * logit_p + prof.sal_shift
                   + prof.sal_noise * normal(rng, kind.shape[0]))
    d_kind = dup_kind[d_comp]
    d_logit = np.array([m for m, _ in _P_LOGIT])[d_kind] + 0.5 * normal(rng, d_comp.shape[0])
    d_sal = np.clip(sal[d_src] + np.where(d_kind == K_NEAR_DUP, 0.05, 0.0)
                    * normal(rng, d_comp.shape[0]), 0.0, 1.0)

    comp = np.concatenate([comp, d_comp])
    kind = np.concatenate([kind, d_kind])
    ref = np.concatenate([ref, d_src])  # for duplicates: flat index of the source lesson
    logit_p = np.concatenate([logit_p, d_logit])
    sal = np.concatenate([sal, d_sal])
    dvar = np.concatenate([np.full(n_base.sum(), -1), d_var])
    slot = np.concatenate([slot, np.full(d_comp.shape[0], -1)])
    o = np.argsort(comp, kind="stable")
    comp, kind, ref, logit_p, sal, dvar = comp[o], kind[o], ref[o], logit_p[o], sal[o], dvar[o]
    slot = slot[o]
    # A duplicate's source index was a position before this sort: map it to the new one.
    new_pos = np.empty_like(o)
    new_pos[o] = np.arange(o.shape[0])
    is_dup = (kind == K_EXACT_DUP) | (kind == K_NEAR_DUP)
    ref[is_dup] = new_pos[ref[is_dup]]
    n_les = np.bincount(comp, minlength=runs)
    starts = np.concatenate([[0], np.cumsum(n_les)[:-1]])
    index = np.arange(comp.shape[0]) - starts[comp]
    if prof.reversed_domain is not None:
        sal = _reversed_in_domain(seed, prof, v, comp, sal)
    sal = np.round(sal, 2)
    p_useful = sigmoid(logit_p)
    n = comp.shape[0]
    useful = rng.random(n) < p_useful

    # Per-lesson defects.
    us = rng.random(n)
    sal_defect = np.select(
        [us < prof.sal_missing_rate, us < prof.sal_missing_rate + prof.sal_out_rate,
         us < prof.sal_missing_rate + prof.sal_out_rate + prof.sal_string_rate], [1, 2, 3], 0)
    sal_pick = pick(rng, len(SAL_OUT) * (len(SAL_STRINGS) + 1), n)
    # One in five non-numeric saliences is a JSON null rather than a string.
    sal_defect[(sal_defect == 3) & (sal_pick % (len(SAL_STRINGS) + 1) == len(SAL_STRINGS))] = 4
    ut = rng.random(n)
    text_defect = np.where(ut < prof.bad_text_rate / 2, 2, np.where(ut < prof.bad_text_rate, 1, 0))
    text_defect[kind == K_EXACT_DUP] = 0  # a duplicate repeats its source verbatim
    ev_missing = rng.random(n) < prof.evidence_missing_rate
    tpl = pick(rng, len(PASS_NOTES), n)

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
    wrap = pick(rng, len(PROSE_BEFORE) * len(PROSE_AFTER) * len(PROSE_ONLY), runs)
    tok_noise = normal(rng, runs)
    lat_noise = normal(rng, runs)
    # Wording: frame, synonyms, the figures an ungrounded lesson invents; paraphrase level.
    u_frame = rng.random(n)
    u_syn = rng.random((n, N_SYNONYMS))
    ug_n = 2 + pick(rng, 60, n)
    u_para = u_syn2 = u_frame2 = None
    if prof.paraphrase:
        u_para = rng.random(n)
        u_syn2 = rng.random((n, N_SYNONYMS))
        u_frame2 = rng.random(n)

    # The voices come from a stream of their own: rewording moves no other draw.
    rng_v = stream(seed, 2, name_key(prof.name), 1)
    u_voice = rng_v.random((n, N_VOICE))
    u_voice2 = rng_v.random((n, N_VOICE)) if prof.paraphrase else None
    u_ev = rng_v.random(n) if prof.paraphrase else None
    wording = _Wording(u_frame, u_syn, ug_n, u_para, u_syn2, u_frame2, tpl, dvar, u_voice,
                       u_voice2, u_ev)
    texts, evid, meaning, ref_rank, para = _word_lessons(prof, v, kind, ref, comp, slot,
                                                         text_defect, wording)
    lines = _completion_lines(prof, v, hashes, texts, evid, sal, sal_defect, sal_pick,
                              ev_missing, n_les, starts, text_kind, pretty, cut, wrap,
                              tok_noise, lat_noise)

    parseable = np.isin(text_kind, PARSEABLE)
    candidate = parseable[comp] & (text_defect == 0)
    has_evidence = ~ev_missing & np.array([len(e) > 0 for e in evid], dtype=bool)
    return Completions(lines, text_kind, comp, index, kind, p_useful, useful, candidate,
                       sal_defect, text_defect, sal, meaning, ref_rank, para, has_evidence)


def _reversed_in_domain(seed: Seed, prof: ExtractorProfile, v: Verdicts, comp: np.ndarray,
                        sal: np.ndarray) -> np.ndarray:
    """``sal`` with the slice effect: every lesson of a verdict of the profile's
    ``reversed_domain`` gets its salience reversed on the logit scale,
    ``sigmoid(-logit(s) + REVERSED_SALIENCE_SD * z)``: the extractor ranks its lessons
    there upside down (its junk above its grounded lessons). ``z`` comes from a stream of
    its own (the extractor's name, sub-key 2), drawn for every lesson in one go: the
    effect moves no other draw, so every lesson elsewhere keeps its salience, and every
    lesson its text, usefulness and labels."""
    names = [d.name for d in DOMAINS]
    if prof.reversed_domain not in names:
        raise ValueError(f"reversed_domain {prof.reversed_domain!r} is not one of {names}")
    z = normal(stream(seed, 2, name_key(prof.name), 2), comp.shape[0])
    p = np.clip(sal, 1e-6, 1.0 - 1e-6)  # a duplicate's clipped 0 or 1 has no logit
    flipped = sigmoid(-np.log(p / (1.0 - p)) + REVERSED_SALIENCE_SD * z)
    return np.where(v.domain[comp] == names.index(prof.reversed_domain), flipped, sal)


def _word_lessons(
    prof: ExtractorProfile, v: Verdicts, kind: np.ndarray, ref: np.ndarray, comp: np.ndarray,
    slot: np.ndarray, text_defect: np.ndarray, w: _Wording,
) -> tuple[list[Any], list[list[str]], list[str], np.ndarray, np.ndarray]:
    """Text, evidence, meaning, reference rank and paraphrase level of every lesson.

    Duplicates are resolved after their sources, which come first. No draw is made here:
    every uniform was drawn by :func:`make_completions`, in its fixed order."""
    n = kind.shape[0]
    u_frame, u_syn, ug_n, tpl, dvar = w.u_frame, w.u_syn, w.ug_n, w.tpl, w.dvar
    u_para, u_syn2, u_frame2 = w.u_para, w.u_syn2, w.u_frame2
    texts: list[Any] = [None] * n
    evid: list[list[str]] = [[]] * n
    meaning = [""] * n
    ref_rank = np.zeros(n, dtype=np.int64)
    para = np.zeros(n, dtype=np.int64)
    rank_of_slot = np.cumsum(v.failed, axis=1)  # failed slot j of verdict i is r<rank>
    kind_l, ref_l, comp_l, slot_l = kind.tolist(), ref.tolist(), comp.tolist(), slot.tolist()
    for i in range(n):
        k = kind_l[i]
        r = ref_l[i]
        ci = comp_l[i]
        if k in (K_SPECIFIC, K_UNGROUNDED):
            c = CHECKS[r]
            if k == K_SPECIFIC:
                ev = v.payloads[ci]["checks"][slot_l[i]]["evidence"]
                meaning[i] = f"ref:{ci}:{slot_l[i]}"
                ref_rank[i] = rank_of_slot[ci, slot_l[i]]
            else:
                ev = c.fail_evidence.format(n=int(ug_n[i]))
                meaning[i] = f"ungrounded:{ci}:{i}"
            run = v.payloads[ci]["run_id"]
            texts[i] = lesson_text(c, v.obj[ci], ev, run, u_frame[i], u_syn[i],
                                   prof.synonym_rate, w.u_voice[i], prof.voice)
            evid[i] = ["check:" + c.name]
            if prof.paraphrase and k == K_SPECIFIC:
                heavy = u_para[i] < prof.heavy_rate
                para[i] = 2 if heavy else 1
                texts[i] = (heavy_paraphrase(c, v.obj[ci], ev, run, u_frame2[i], u_syn2[i],
                                             w.u_voice2[i])
                            if heavy else light_paraphrase(texts[i], u_syn2[i], w.u_voice2[i]))
                evid[i] = _paraphrase_evidence(c.name, float(w.u_ev[i]), heavy)
        elif k == K_VAGUE:
            c = CHECKS[r]
            texts[i] = c.vague_lesson
            evid[i] = ["check:" + c.name]
            meaning[i] = f"vague:{r}"
        elif k == K_PASS_NOTE:
            c = CHECKS[r]
            dname = DOMAINS[int(v.domain[ci])].name
            texts[i] = PASS_NOTES[int(tpl[i])].format(check=c.name, domain=dname)
            evid[i] = ["check:" + c.name]
            meaning[i] = f"pass_note:{r}:{int(tpl[i])}"
        elif k == K_GENERIC:
            texts[i] = GENERIC_LESSONS[r]
            meaning[i] = f"generic:{r}"
        else:
            src_text = texts[r] if isinstance(texts[r], str) and texts[r] else "Test more."
            texts[i] = src_text if k == K_EXACT_DUP else NEAR_DUP[int(dvar[i])](src_text)
            evid[i] = evid[r]
            meaning[i] = meaning[r]
            ref_rank[i] = ref_rank[r]
        if text_defect[i] == 1:
            texts[i] = ""
        elif text_defect[i] == 2:
            texts[i] = None

    return texts, evid, meaning, ref_rank, para


def _completion_lines(
    prof: ExtractorProfile, v: Verdicts, hashes: list[str], texts: list[Any],
    evid: list[list[str]], sal: np.ndarray, sal_defect: np.ndarray, sal_pick: np.ndarray,
    ev_missing: np.ndarray, n_les: np.ndarray, starts: np.ndarray, text_kind: np.ndarray,
    pretty: np.ndarray, cut: np.ndarray, wrap: np.ndarray, tok_noise: np.ndarray,
    lat_noise: np.ndarray,
) -> list[str]:
    """The §2 completion line of every verdict: its lessons as model text, in its shape.

    Many parameters because the arrays are the simulator's random draws, made once for every
    verdict by make_completions and handed over as they are (private: its one caller)
    """
    runs = n_les.shape[0]
    n = len(texts)
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
            les["salience"] = SAL_OUT[sp_l[i] % len(SAL_OUT)]
        elif d == 3:
            les["salience"] = SAL_STRINGS[sp_l[i] % (len(SAL_STRINGS) + 1)]
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
            text = (PROSE_BEFORE[w % len(PROSE_BEFORE)] + js
                    + PROSE_AFTER[(w // len(PROSE_BEFORE)) % len(PROSE_AFTER)])
        elif tk == T_TRUNCATED:
            # Cut before the closing "]}" so no brace-matching trick can repair it.
            text = js[: 10 + int(cut[ci] * (len(js) - 14))]
        elif tk == T_PROSE_ONLY:
            text = PROSE_ONLY[w % len(PROSE_ONLY)]
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
    return lines


_SHAPES = ("truncated", "prose_only", "trailing_comma")


def structured_output_reply(body: Any, *, malformed_rate: float = 0.2) -> dict[str, Any]:
    """A chat-completions response body for the request ``body`` (see the module)."""
    body = body if isinstance(body, dict) else {}
    messages = body.get("messages") or []
    last = str(messages[-1].get("content", "")) if messages else ""
    key = json.dumps([messages, body.get("seed")], sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    shape = _SHAPES[digest[8] % len(_SHAPES)]
    lessons = [{"text": f"Check this before the next run: {last[-60:].strip()}",
                "salience": round(0.5 + (digest[9] / 255) * 0.5, 2), "evidence": []}]
    good = json.dumps({"lessons": lessons}, ensure_ascii=False)
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_schema" or u >= malformed_rate:
        text = good
    elif kind == "json_object":
        text = json.dumps({"lesson": lessons[0]}, ensure_ascii=False)
    elif shape == "truncated":
        text = good[: len(good) // 2]
    elif shape == "prose_only":
        text = "The run failed; the team should look into the failing checks."
    else:
        text = good[:-2] + ",]}"
    return {
        "id": "chatcmpl-" + digest.hex()[:12], "object": "chat.completion",
        "model": body.get("model", "unknown"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(last.split()), "completion_tokens": len(text) // 4},
    }
