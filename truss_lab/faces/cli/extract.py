"""The commands that make runs: ``extract`` (the batch runner), ``grid`` (a grid of
runs) and ``rerun``. Reading runs back (``runs``, ``errors``) is :mod:`.runs`.

No logic lives here: everything is a call to :func:`truss_lab.extract._batch.run_extraction`
or :func:`truss_lab.extract._grid.run_grid` (``rerun``: :func:`truss_lab.extract._batch.rerun`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ...core._errors import BadInputError
from ...core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ...extract._limits import DEFAULT_DEADLINE, DEFAULT_MAX_CONSECUTIVE_FAILURES, MAX_SAMPLES
from .._text import runs_text
from .common import (
    db_option,
    emit,
    friendly,
    json_option,
    run_argument,
)

__all__ = ["batch", "extract", "grid", "rerun"]


def _check_new_run_id(store: Any, run_id: str | None) -> None:
    """A ``--run-id`` already taken is refused here, in the CLI's words (the library's
    error names its ``resume=True``)."""
    from ...store._runs import run_exists

    if run_id and run_exists(store, run_id):
        raise BadInputError(f"run {run_id!r} already exists; continue it with "
                            f"`--resume {run_id}`, or choose another --run-id",
                            field="--run-id")


def _off_refused() -> BadInputError:
    return BadInputError(
        "the lesson extraction policy is off (the default: see `truss-lab schema config`), "
        "so this run would call no extractor and write nothing; give --policy on or "
        "--policy model-scored, or --allow-off to record the empty run on purpose",
        field="--policy")


@click.command()
@db_option
@click.option("--extractor", "extractor_spec", default=None,
              help="heuristic | replay:EXTRACTOR_ID | replay:PATH.jsonl[#ID] | openai:MODEL "
                   "(on --resume: defaults to the run's).")
@click.option("--base-url", default=None,
              help="Endpoint of an OpenAI-compatible server, for openai:MODEL "
                   "(default: $OPENAI_BASE_URL, else api.openai.com).")
@click.option("--prompt", default=None, metavar="NAME",
              help="Lesson prompt version for openai:MODEL (default lesson-v1): built in or "
                   "registered with `truss-lab prompts add FILE` (`truss-lab prompts "
                   "list`). A replay uses its recordings' own.")
@click.option("--policy", type=click.Choice(["off", "on", "model-scored"]), default=None,
              help="Lesson extraction policy (default: config file / env, else off, "
                   "which is refused unless --allow-off).")
@click.option("--allow-off", is_flag=True,
              help="Record a run even when the policy is off (it extracts nothing).")
@click.option("--extraction-min-salience", "--min-salience", "extraction_min_salience",
              type=float, default=None,
              help="extraction_min_salience in [0, 1] for model-scored (default "
                   f"{DEFAULT_MIN_SALIENCE:.2f}).")
@click.option("--executor", default=None,
              help="auto (default: inline, or processes for the heuristic on 20,000+ "
                   "verdicts) | inline | threads:N | processes:N | dask-local | "
                   "dask://host:port (on --resume: defaults to the run's).")
@click.option("--verdicts", "verdict_filter", default=None,
              help="SQL WHERE clause over the journal, or a .jsonl/.parquet file of refs.")
@click.option("--chunk-size", type=click.IntRange(1), default=None,
              help="Verdicts per chunk (one transaction each; default 1000; a resume "
                   "keeps the run's).")
@click.option("--run-id", default=None, help="Id for a new run (default: generated).")
@click.option("--name", default=None, help="A human name for the new run (shown by `runs`).")
@click.option("--tag", "tags", multiple=True,
              help="A tag for the new run; repeat for several.")
@click.option("--resume", "resume_id", default=None, metavar="RUN",
              help="Continue run RUN (killed, failed or finished) where it stopped.")
@click.option("--dry-run", is_flag=True, help="Keep candidates only; write no memory.")
@click.option("--max-consecutive-failures", default=DEFAULT_MAX_CONSECUTIVE_FAILURES,
              show_default=True, type=click.IntRange(1),
              help="Stop the run (failed, resumable) after this many verdicts in a row "
                   "whose live provider call failed after its retries.")
@click.option("--max-retries", default=None, type=click.IntRange(0),
              help="Retries of one live provider call (openai:MODEL; default 5).")
@click.option("--deadline", default=None, type=click.FloatRange(0, min_open=True),
              metavar="SECONDS",
              help="Most seconds one live provider call may take, its retries included "
                   f"(openai:MODEL; default {DEFAULT_DEADLINE:g}); past it the call counts "
                   "as a failure of the provider.")
@click.option("--response-format", type=click.Choice(["none", "json_object", "json_schema"]),
              default=None, help="Structured output for openai:MODEL: none (default), "
              "json_object, or json_schema (the lessons schema).")
@click.option("--temperature", type=float, default=None,
              help="Sampling temperature for openai:MODEL (default 0).")
@click.option("--top-p", type=float, default=None, help="top_p for openai:MODEL.")
@click.option("--seed", type=int, default=None, help="Sampling seed for openai:MODEL.")
@click.option("--max-tokens", type=click.IntRange(1), default=None,
              help="Most tokens per completion for openai:MODEL.")
@click.option("--samples", type=click.IntRange(1, MAX_SAMPLES), default=None,
              help="Completions per verdict for openai:MODEL (default 1); with K > 1 the "
                   "gate keeps one lesson per cluster and stores its self-consistency "
                   "(docs/how-to/live-or-batch.md).")
@click.option("--supports-n", is_flag=True,
              help="The server honours n (OpenAI, vLLM): one call per verdict draws its "
                   "K samples; otherwise K calls.")
@click.option("--max-error-share", default=0.1, show_default=True, type=float,
              help="Exit 1 when more than this share of the run's verdicts have errors "
                   "(see `truss-lab errors RUN`).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@json_option
@friendly
def extract(db: str, extractor_spec: str | None, base_url: str | None, prompt: str | None,
            policy: str | None,
            allow_off: bool, extraction_min_salience: float | None, executor: str | None,
            verdict_filter: str | None, chunk_size: int | None, run_id: str | None,
            name: str | None, tags: tuple[str, ...], resume_id: str | None,
            dry_run: bool, max_consecutive_failures: int, max_retries: int | None,
            deadline: float | None, response_format: str | None, temperature: float | None,
            top_p: float | None, seed: int | None, max_tokens: int | None,
            samples: int | None, supports_n: bool, max_error_share: float, quiet: bool,
            as_json: bool) -> None:
    """Extract lessons from recorded verdicts (a resumable batch run).

    openai:MODEL runs are recorded with their configuration (the --response-format
    and sampling options); `--extractor replay:EXTRACTOR_ID` replays them offline.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result. Long because a --resume reads back every setting the run was made
    with and lets each option override its own (a merge that belongs in the library: the
    closing note of issue 39 lists it).
    """
    from ...core._config import MemoryConfig
    from ...core._models import LessonExtractionPolicy
    from ...core._secrets import MASK
    from ...extract._batch import run_extraction
    from ...extract._spec import make_extractor, spec_run_config
    from ...store._runs import run_info
    from ...store._store import open_store

    check_threshold(max_error_share, "--max-error-share", name="max_error_share")
    if resume_id and run_id and resume_id != run_id:
        raise BadInputError("give either --run-id or --resume, not both", field="--resume")
    with open_store(db) as store:
        _check_new_run_id(store, None if resume_id else run_id)
        prior: dict[str, Any] = {}
        if resume_id:
            row = run_info(store, resume_id)
            # Policy and threshold are the run's columns (stored once), the rest its config.
            prior = {**json.loads(row["config"]), "lesson_extraction": row["policy"],
                     "extraction_min_salience": row["extraction_min_salience"]}
            dry_run = dry_run or not row["write_memory"]
        spec = extractor_spec or prior.get("extractor_spec")
        if spec is None:
            raise BadInputError("--extractor is required", field="--extractor")
        overrides: dict[str, Any] = {}
        pol = policy or prior.get("lesson_extraction")
        if pol is not None:
            overrides["lesson_extraction"] = pol
        sal = extraction_min_salience if extraction_min_salience is not None else prior.get(
            "extraction_min_salience")
        if sal is not None:
            overrides["extraction_min_salience"] = sal
        config = MemoryConfig.load(**overrides)
        if config.lesson_extraction is LessonExtractionPolicy.off and not allow_off:
            raise _off_refused()
        retries = max_retries if max_retries is not None else prior.get("max_retries")
        deadline = deadline if deadline is not None else prior.get("deadline")
        knobs = {"response_format": response_format, "temperature": temperature,
                 "top_p": top_p, "seed": seed, "max_tokens": max_tokens, "samples": samples,
                 "prompt_version": prompt}
        if resume_id and not any(v is not None for v in knobs.values()):
            knobs = prior.get("extractor_knobs") or {}
        supports_n = supports_n or bool(prior.get("supports_n"))
        if base_url is None and MASK in (prior.get("base_url") or ""):
            # The stored URL had a credential (user:key@, ?api-key=), masked when it
            # was stored: sending the mask would fail every call of the resumed run.
            raise BadInputError(
                f"run {resume_id}'s base URL held a credential, stored masked "
                f"({prior['base_url']}); give it again with --base-url", field="--base-url")
        extractor = make_extractor(spec, store, base_url=base_url or prior.get("base_url"),
                                   max_retries=retries, knobs=knobs, supports_n=supports_n,
                                   deadline=deadline,
                                   rerun_of=None if extractor_spec else prior.get("rerun_of"))
        verdicts: Any = verdict_filter if verdict_filter is not None else prior.get(
            "verdicts")
        run = run_extraction(
            store, extractor, config, verdicts=verdicts, executor=executor,
            progress=not quiet and not as_json, run_id=resume_id or run_id,
            write_memory=not dry_run, chunk_size=chunk_size,
            resume=resume_id is not None,
            run_config=spec_run_config(spec, base_url=base_url, max_retries=max_retries,
                                       supports_n=supports_n, deadline=deadline, knobs=knobs),
            name=name, tags=tags, max_consecutive_failures=max_consecutive_failures,
        )
        emit(run.to_dict(), as_json, repr(run))
    if resume_id is not None and not as_json:
        click.echo(f"note: --resume asked again for {run.retried} verdict(s) every call of "
                   f"which had failed; {run.n_errors} verdict(s) of the run have errors now",
                   err=True)
    if run.n_verdicts and run.n_errors / run.n_verdicts > max_error_share:
        click.echo(f"error: {run.n_errors} of {run.n_verdicts} verdicts "
                   f"({run.n_errors / run.n_verdicts:.1%}) have errors, above "
                   f"--max-error-share {max_error_share:g}; list them with "
                   f"`truss-lab errors {run.run_id}`", err=True)
        sys.exit(1)

@click.command()
@click.argument("grid_file", metavar="FILE.toml", type=click.Path(dir_okay=False))
@db_option
@click.option("--max-error-share", default=0.1, show_default=True, type=float,
              help="Exit 1 when a run of the grid has errors on more than this share of "
                   "its verdicts (see `truss-lab errors RUN`).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@json_option
@friendly
def grid(grid_file: str, db: str, max_error_share: float, quiet: bool, as_json: bool) -> None:
    """Run a grid of extractions (extractor x prompt x model x sampling,
    docs/how-to/grids-frontier.md): one named, tagged run per cell. Re-running it skips
    finished runs and resumes unfinished ones."""
    from ...extract._grid import load_grid, run_grid
    from ...store._store import open_store

    check_threshold(max_error_share, "--max-error-share", name="max_error_share")
    g = load_grid(grid_file)  # the whole file is checked before the database is opened
    if not quiet and not as_json:
        click.echo(f"grid {g.name}: {len(g.cells)} cells", err=True)
    with open_store(db) as store:
        df = run_grid(store, g, progress=not quiet and not as_json)
    if as_json:
        emit(json.loads(df.to_json(orient="records", date_format="iso")), True, "")
    else:
        counts = df["action"].value_counts()
        click.echo(f"grid {g.name}: {len(df)} runs ("
                   + ", ".join(f"{counts.get(a, 0)} {a}" for a in
                               ("started", "resumed", "skipped")) + ")")
        click.echo(runs_text(df, ["run_id", "action", "extractor_id", "status", "n_verdicts",
                                  "n_candidates", "n_lessons", "n_errors", "seconds"]))
    share = df["n_errors"] / df["n_verdicts"].where(df["n_verdicts"] > 0)
    over = df[share > max_error_share]
    if len(over):
        click.echo(f"error: {len(over)} run(s) have errors on more than {max_error_share:g} "
                   f"of their verdicts ({', '.join(over['run_id'])}); list them with "
                   "`truss-lab errors RUN`", err=True)
        sys.exit(1)

@click.command()
@run_argument
@db_option
@click.option("--run-id", "new_run_id", default=None,
              help="Id of the new run (default: generated); an existing rerun of RUN "
                   "is resumed.")
@click.option("--executor", default=None,
              help="auto (default) | inline | threads:N | processes:N | dask-local | "
                   "dask://host:port")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@json_option
@friendly
def rerun(run_id: str, db: str, new_run_id: str | None, executor: str | None, quiet: bool,
          as_json: bool) -> None:
    """Replay run RUN from its own recordings as a new run: zero live calls, the same
    candidates (a live run's own answers, never another run's)."""
    from ...extract._batch import rerun as rerun_run
    from ...store._store import open_store

    with open_store(db, must_exist=True) as store:
        run = rerun_run(store, run_id, new_run_id=new_run_id, executor=executor,
                        progress=not quiet and not as_json)
        emit(run.to_dict(), as_json, repr(run))


@click.group("batch")
def batch() -> None:
    """A provider's batch interface (the OpenAI Batch file format): prepare the input file;
    `ingest completions OUT --format openai-batch` reads the output."""


@batch.command("prepare")
@db_option
@click.option("--extractor", "extractor_spec", required=True, metavar="openai:MODEL",
              help="The live extractor whose requests the file holds.")
@click.option("--prompt", default=None, metavar="NAME", help="Prompt template version.")
@click.option("--verdicts", "verdict_filter", default=None,
              help="SQL condition over the journal selecting verdicts (default: all).")
@click.option("--response-format", type=click.Choice(["none", "json_object", "json_schema"]),
              default=None, help="Structured output of the requests.")
@click.option("--temperature", type=float, default=None, help="Sampling temperature.")
@click.option("--max-tokens", type=click.IntRange(1), default=None, help="Most tokens.")
@click.option("--samples", type=click.IntRange(1, 1), default=None,
              help="Samples per verdict (a batch holds 1).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The Batch input file to write (JSONL).")
@json_option
@friendly
def batch_prepare(db: str, extractor_spec: str, prompt: str | None, verdict_filter: str | None,
                  response_format: str | None, temperature: float | None,
                  max_tokens: int | None, samples: int | None, out: str,
                  as_json: bool) -> None:
    """Write an OpenAI Batch input file: one request per verdict, each body exactly what
    the live extractor sends (so its request hash is the live one)."""
    from ...extract._batch_api import prepare_batch
    from ...extract._spec import make_extractor
    from ...store._store import open_store

    knobs = {"prompt_version": prompt, "response_format": response_format,
             "temperature": temperature, "max_tokens": max_tokens, "samples": samples}
    with open_store(db) as store:
        ext = make_extractor(extractor_spec, store, knobs=knobs)
        try:
            n = prepare_batch(store, ext, out, verdicts=verdict_filter)
        finally:
            ext.provider.close()
    emit({"out": out, "requests": n, "extractor_id": ext.extractor_id}, as_json,
         f"{out}: {n} requests for {ext.extractor_id}; send it to the provider's batch "
         f"API, then `truss-lab ingest completions OUTPUT.jsonl --format openai-batch "
         f"--extractor {ext.extractor_id} --db {db}`")

