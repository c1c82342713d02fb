"""A grid of extraction runs: extractor x prompt x model x sampling settings over one
verdict selection, each cell a normal, named and tagged run.

:func:`load_grid` reads a grid file (TOML, docs/how-to/grids-frontier.md); :func:`run_grid`
makes its runs through the one extraction path: each cell's extractor comes from
:func:`~truss_lab.extract._spec.make_extractor` (the spec ``truss-lab extract
--extractor`` takes), its run from :func:`~truss_lab.extract._batch.run_extraction`
with the same recorded ``run_config`` as ``extract``, so ``truss-lab extract --resume
RUN`` also resumes a grid's run. A cell's run id is fixed by the grid's name and the
cell's values, so running the grid again skips the finished runs, resumes the
unfinished ones (killed, failed) and starts only the cells that have no run yet.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core._config import MemoryConfig
from ..core._errors import BadInputError
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..core._toml import read_toml
from ..store._runs import get_run, summarize_runs
from ..store._store import Store
from ._batch import DEFAULT_CHUNK_SIZE, parse_executor, run_extraction
from ._extractor import ExtractorConfig
from ._limits import DEFAULT_MAX_CONSECUTIVE_FAILURES
from ._spec import make_extractor, spec_run_config

__all__ = ["MAX_GRID_CELLS", "Grid", "GridCell", "load_grid", "run_grid"]

MAX_GRID_CELLS = 10_000
"""Most cells (runs) a grid file may make: a product of a few long lists grows past what
anyone compares (1,000,000 cells ran for minutes before a word); a larger grid is refused
with its count before anything is built."""

#: The axes of an ``[[axes]]`` table, in the order cells are spelled (and run ids
#: written); every one but ``extractor`` and ``model`` is an
#: :class:`~truss_lab.extract._extractor.ExtractorConfig` knob (``prompt`` is its
#: ``prompt_version``).
AXES = ("extractor", "model", "prompt", "response_format", "temperature", "top_p", "seed",
        "max_tokens", "samples")
_KNOB = {"prompt": "prompt_version"}
#: Settings shared by every cell (top level of the file), with their types and defaults.
_SETTINGS: dict[str, tuple[type | tuple[type, ...], Any]] = {
    "name": (str, None),
    "verdicts": (str, None),
    "policy": (str, "model-scored"),
    "min_salience": ((int, float), DEFAULT_MIN_SALIENCE),
    "tags": (list, []),
    "write_memory": (bool, False),
    "executor": (str, "inline"),
    "chunk_size": (int, DEFAULT_CHUNK_SIZE),
    "base_url": (str, None),
    "max_retries": (int, None),
    "deadline": ((int, float), None),
    "supports_n": (bool, False),
    "max_consecutive_failures": (int, DEFAULT_MAX_CONSECUTIVE_FAILURES),
}
_POLICIES = ("on", "model-scored")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]+")


@dataclass(frozen=True)
class GridCell:
    """One run of a grid: its id and name, the extractor spec and the knobs."""

    run_id: str
    """The run's id (derived from the grid's name and the cell)."""
    name: str
    """``extractor=SPEC key=value ...``: what the cell sets, for people (``runs``)."""
    extractor: str
    """The spec ``truss-lab extract --extractor`` takes (``openai:MODEL`` for a model)."""
    knobs: Mapping[str, Any] = field(default_factory=dict)
    """:class:`ExtractorConfig` fields the cell sets (live extractors only)."""
    base_url: str | None = None
    """The server of a live extractor (None: the provider's default)."""


@dataclass(frozen=True)
class Grid:
    """A grid file, read and checked: the shared settings and the cells, in file order."""

    name: str
    """The grid's name (its runs are tagged ``grid:NAME``)."""
    cells: tuple[GridCell, ...]
    """One per run, in file order."""
    verdicts: str | None = None
    """A SQL condition on the verdicts every run extracts (None: all)."""
    config: MemoryConfig = field(default_factory=lambda: MemoryConfig(
        lesson_extraction="model-scored"))
    """The policy and threshold of every run."""
    tags: tuple[str, ...] = ()
    """The file's tags for every run."""
    write_memory: bool = False
    """Whether the runs write their lessons to memory."""
    executor: str = "inline"
    """How the runs are executed: ``inline``, ``auto``, a process pool (as ``extract
    --executor``)."""
    chunk_size: int = DEFAULT_CHUNK_SIZE
    """Verdicts per chunk (one transaction each)."""
    max_retries: int | None = None
    """Retries of a live call (None: the provider's default)."""
    deadline: float | None = None
    """Seconds a live call may take in all (None: the provider's default)."""
    supports_n: bool = False
    """Whether the server takes ``n`` (k samples in one call)."""
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES
    """Failed calls in a row that stop a run (its circuit breaker)."""
    source: str = "<grid>"
    """The file read."""

    @property
    def run_ids(self) -> list[str]:
        """The cells' run ids, in file order."""
        return [c.run_id for c in self.cells]

    @property
    def run_tags(self) -> tuple[str, ...]:
        """The tags every run of the grid gets: ``grid:NAME``, then the file's."""
        return (f"grid:{self.name}", *(t for t in self.tags if t != f"grid:{self.name}"))


def load_grid(path: str | os.PathLike[str]) -> Grid:
    """Read and check a grid file (docs/how-to/grids-frontier.md).

    Parameters
    ----------
    path : path
        The TOML file.

    Returns
    -------
    Grid
        The grid's cells and run options.

    Raises
    ------
    BadInputError
        Any mistake, naming the file and the line (TOML syntax) or the key.
    """
    source = str(path)
    data = read_toml(path, what="the grid file")
    return grid_from_dict(data, source=source)


def grid_from_dict(data: Mapping[str, Any], *, source: str = "<grid>") -> Grid:
    """A :class:`Grid` from the TOML file's table (see :func:`load_grid`)."""
    def bad(message: str, key: str) -> BadInputError:
        return BadInputError(message, source=source, field=key)

    unknown = sorted(set(data) - set(_SETTINGS) - {"axes"})
    if unknown:
        raise bad(f"unknown key; a grid file has {', '.join(sorted(_SETTINGS))} and "
                  "[[axes]] tables", unknown[0])
    s: dict[str, Any] = {}
    for key, (kind, default) in _SETTINGS.items():
        value = data.get(key, default)
        if value is not None and (not isinstance(value, kind) or (
                isinstance(value, bool) and kind is not bool)):
            raise bad(f"expected {_kind_name(kind)}, got {json.dumps(value, default=str)}",
                      key)
        s[key] = value
    if not s["name"] or _ID_UNSAFE.search(s["name"]):
        raise bad("the grid needs a name of letters, digits and . _ @ + = - (it starts "
                  "every run id)", "name")
    if s["policy"] not in _POLICIES:
        raise bad(f"expected one of {', '.join(_POLICIES)} (a grid of runs that extract "
                  "nothing is not an experiment)", "policy")
    if not all(isinstance(t, str) and t for t in s["tags"]):
        raise bad("expected a list of non-empty strings", "tags")
    try:
        config = MemoryConfig(lesson_extraction=s["policy"],
                              extraction_min_salience=float(s["min_salience"]))
    except BadInputError as exc:
        raise bad(exc.message, "min_salience") from None
    try:
        parse_executor(s["executor"])
    except BadInputError as exc:
        raise bad(exc.message, "executor") from None
    for key in ("chunk_size", "max_consecutive_failures"):
        if s[key] < 1:
            raise bad("expected an integer >= 1", key)
    if s["max_retries"] is not None and s["max_retries"] < 0:
        raise bad("expected an integer >= 0", "max_retries")
    if s["deadline"] is not None and not (math.isfinite(s["deadline"]) and s["deadline"] > 0):
        raise bad("expected a number of seconds > 0", "deadline")
    blocks = data.get("axes")
    if not isinstance(blocks, list) or not blocks or not all(
            isinstance(b, dict) for b in blocks):
        raise bad('expected one or more [[axes]] tables, each with an extractor (e.g. '
                  'extractor = ["heuristic", "replay:ID"])', "axes")
    cells: list[GridCell] = []
    where: dict[str, str] = {}
    for i, block in enumerate(blocks):
        for cell in _block_cells(block, f"axes[{i}]", s["name"], s["base_url"], bad,
                                 MAX_GRID_CELLS - len(cells)):
            if cell.run_id in where:
                raise bad(f"gives the same run as {where[cell.run_id]} ({cell.run_id}); "
                          "each cell must differ", f"axes[{i}]")
            where[cell.run_id] = f"axes[{i}]"
            cells.append(cell)
    return Grid(name=s["name"], cells=tuple(cells), verdicts=s["verdicts"], config=config,
                tags=tuple(s["tags"]), write_memory=s["write_memory"],
                executor=s["executor"], chunk_size=s["chunk_size"],
                max_retries=s["max_retries"],
                deadline=None if s["deadline"] is None else float(s["deadline"]),
                supports_n=s["supports_n"],
                max_consecutive_failures=s["max_consecutive_failures"], source=source)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "a number" if float in kinds else names[kinds[0]]


def _block_cells(block: Mapping[str, Any], at: str, grid_name: str, base_url: str | None,
                 bad: Any, room: int) -> list[GridCell]:
    """The cells of one ``[[axes]]`` table: the product of its lists (a scalar is a list
    of one), each checked as the extractor it names; more than ``room`` is refused
    before one is built."""
    unknown = sorted(set(block) - set(AXES) - {"base_url"})
    if unknown:
        raise bad(f"unknown axis; an [[axes]] table has {', '.join(AXES)} (and base_url)",
                  f"{at}.{unknown[0]}")
    if "extractor" not in block:
        raise bad('every [[axes]] table needs extractor (heuristic, replay:ID, '
                  'replay:PATH.jsonl[#ID], openai:MODEL, or openai with a model axis)',
                  f"{at}.extractor")
    url = block.get("base_url", base_url)
    if url is not None and not isinstance(url, str):
        raise bad("expected a string", f"{at}.base_url")
    axes: dict[str, list[Any]] = {}
    for key in AXES:
        if key not in block:
            continue
        vals = block[key] if isinstance(block[key], list) else [block[key]]
        if not vals:
            raise bad("an empty list makes no cells; give at least one value", f"{at}.{key}")
        for v in vals:
            if isinstance(v, dict | list):
                raise bad(f"expected a value or a list of values, got {json.dumps(v)}",
                          f"{at}.{key}")
        axes[key] = vals
    n = math.prod(len(v) for v in axes.values())
    if n > room:
        raise bad(f"makes {n:,} cells ({' x '.join(str(len(v)) for v in axes.values())}), "
                  f"more than the {room:,} a grid has room for (at most {MAX_GRID_CELLS:,} "
                  "cells in all); split it into smaller grids", at)
    cells = []
    for combo in itertools.product(*axes.values()):
        values = dict(zip(axes, combo, strict=True))
        cells.append(_cell(values, at, grid_name, url, bad))
    return cells


def _cell(values: dict[str, Any], at: str, grid_name: str, base_url: str | None,
          bad: Any) -> GridCell:
    spec, model = values.pop("extractor"), values.pop("model", None)
    if not isinstance(spec, str) or not spec:
        raise bad(f"expected an extractor spec string, got {json.dumps(spec)}",
                  f"{at}.extractor")
    if spec == "openai":
        if model is None:
            raise bad('extractor = "openai" needs a model axis (or write openai:MODEL)',
                      f"{at}.model")
        if not isinstance(model, str) or not model:
            raise bad(f"expected a model name, got {json.dumps(model)}", f"{at}.model")
        spec = f"openai:{model}"
    elif model is not None:
        raise bad('model is an axis of extractor = "openai" (a replay or the heuristic '
                  "has its own model)", f"{at}.model")
    knobs = {_KNOB.get(k, k): v for k, v in values.items()}
    if spec.startswith("openai:"):
        try:
            ExtractorConfig.checked(model=spec.removeprefix("openai:"), **knobs)
        except BadInputError as exc:  # name the knob as the grid file spells it
            key = next((k for k, v in _KNOB.items() if v == exc.field), exc.field)
            raise bad(exc.message, f"{at}.{key}") from None
    elif knobs:
        key = next(iter(values))
        raise bad(f"{key} sets a live extractor's configuration (openai); {spec} uses the "
                  "configuration it was recorded with", f"{at}.{key}")
    shown = [f"extractor={spec}"] + [f"{k}={v}" for k, v in values.items()]
    slug = "-".join([spec, *(f"{k}={v}" for k, v in values.items())])
    run_id = f"{grid_name}-{_ID_UNSAFE.sub('-', slug).strip('-')}"
    return GridCell(run_id=run_id, name=" ".join(shown), extractor=spec, knobs=knobs,
                    base_url=base_url if spec.startswith("openai:") else None)


# -- running it ------------------------------------------------------------------------------


def _same_cell(row: Mapping[str, Any], grid: Grid, cell: GridCell) -> None:
    """Refuse a stored run with the cell's id that was made with other settings (the
    grid file changed under the same name): a skip or a resume would mix them."""
    stored = json.loads(row["config"] or "{}")
    want = {"extractor_spec": cell.extractor, "extractor_knobs": dict(cell.knobs),
            "policy": grid.config.lesson_extraction.value,
            "extraction_min_salience": grid.config.extraction_min_salience,
            "write_memory": grid.write_memory, "verdicts": grid.verdicts}
    have = {"extractor_spec": stored.get("extractor_spec"),
            "extractor_knobs": stored.get("extractor_knobs") or {},
            "policy": row["policy"], "extraction_min_salience": row["extraction_min_salience"],
            "write_memory": bool(row["write_memory"]), "verdicts": stored.get("verdicts")}
    for key, value in want.items():
        if have[key] != value:
            raise BadInputError(
                f"run {cell.run_id} exists with {key}={have[key]!r}, the grid now says "
                f"{value!r}; give the grid another name for new runs (or delete the run)",
                source=grid.source, field="name")


def run_grid(store: Store, grid: Grid | str | os.PathLike[str], *,
             progress: bool = True) -> pd.DataFrame:
    """Make the grid's runs: start the cells with no run, resume the unfinished ones
    (``running`` after a kill, ``failed``), skip the finished ones; in file order.

    Every cell is checked (and its extractor built) before the first run starts, so a
    bad cell leaves the store as it was. Returns :func:`summarize_runs` of the grid's
    runs, in file order, with ``action`` (``started``, ``resumed`` or ``skipped``). A
    live endpoint that stops answering stops the grid (the run is failed and
    resumable): run the grid again once it answers.

    Parameters
    ----------
    store : Store
        The database (opened for writing).
    grid : truss_lab.extract.Grid or str or os.PathLike
        A grid file (Formats §7) or one :func:`truss_lab.extract.load_grid` read.
    progress : bool, default True
        Show a progress bar per run.

    Returns
    -------
    pandas.DataFrame
        :func:`summarize_runs` of the grid's runs, with ``action``.

    Raises
    ------
    BadInputError
        A mistake in the file (naming the line or the key), or a cell whose run exists
        with other settings.
    truss_lab.extract._providers.CircuitOpenError
        A live endpoint stopped answering.

    See Also
    --------
    frontier : The grid's runs side by side on cost, latency and F1.
    run_extraction : One run.

    Examples
    --------
    >>> _ = open("grid.toml", "w").write('''
    ... name = "g"
    ... verdicts = "seq <= 50"
    ... [[axes]]
    ... extractor = ["replay:sim-good-v1", "heuristic"]
    ... ''')
    >>> tl.run_grid(store, "grid.toml", progress=False)[["run_id", "action", "n_verdicts"]]
                     run_id   action  n_verdicts
    0  g-replay-sim-good-v1  started          50
    1           g-heuristic  started          50
    >>> list(tl.run_grid(store, "grid.toml", progress=False)["action"])  # nothing new
    ['skipped', 'skipped']
    """
    g = grid if isinstance(grid, Grid) else load_grid(grid)
    plan: list[tuple[GridCell, str, Any]] = []
    for cell in g.cells:
        row = get_run(store, cell.run_id)
        if row is not None:
            _same_cell(row, g, cell)
        action = ("started" if row is None else
                  "skipped" if row["status"] == "finished" else "resumed")
        plan.append((cell, action, None if action == "skipped" else _extractor(store, g, cell)))
    for cell, action, extractor in plan:
        if extractor is None:
            continue
        try:
            run_extraction(
                store, extractor, g.config, verdicts=g.verdicts, executor=g.executor,
                progress=progress, run_id=cell.run_id, write_memory=g.write_memory,
                chunk_size=g.chunk_size, resume=action == "resumed",
                run_config={**spec_run_config(cell.extractor, base_url=cell.base_url,
                                              max_retries=g.max_retries,
                                              supports_n=g.supports_n, deadline=g.deadline,
                                              knobs=cell.knobs),
                            "grid": g.name},
                name=cell.name, tags=g.run_tags,
                max_consecutive_failures=g.max_consecutive_failures)
        finally:
            close = getattr(extractor.provider, "close", None)
            if close is not None:
                close()  # a live provider's HTTP connections
    out = summarize_runs(store, g.run_ids)
    out = out.set_index("run_id").loc[g.run_ids].reset_index()
    out.insert(1, "action", [a for _, a, _ in plan])
    out.attrs["grid"] = g.name
    return out


def _extractor(store: Store, grid: Grid, cell: GridCell) -> Any:
    """The cell's extractor, built as ``extract`` builds it; a mistake names the cell."""
    live = cell.extractor.startswith("openai:")
    try:
        return make_extractor(cell.extractor, store, base_url=cell.base_url,
                              max_retries=grid.max_retries if live else None,
                              knobs=dict(cell.knobs),
                              supports_n=grid.supports_n and live,
                              deadline=grid.deadline if live else None)
    except BadInputError as exc:
        raise BadInputError(f"run {cell.run_id}: {exc.message}", source=grid.source,
                            field="extractor") from None

