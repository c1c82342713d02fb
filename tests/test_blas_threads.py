"""The numerical hot paths run under truss_lab's BLAS limit and give the pool back.

Observed through threadpoolctl, on numpy's own BLAS, from inside a hot path (the
metrics function ``agreement_table`` calls between its products), not by timing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from truss_lab.core import BLAS_THREADS_ENV, ConfigError, blas_thread_limit, blas_threads
from truss_lab.core._threads import blas_limited
from truss_lab.evaluate._agreement import agreement_table

ROOT = Path(__file__).resolve().parents[1]


def _blas_threads_now() -> int:
    pools = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    assert pools, "numpy's BLAS is not visible to threadpoolctl"
    return max(pools)


def _threads_inside_hot_path() -> list[int]:
    """BLAS threads seen by the metrics callback of a real bootstrap."""
    seen: list[int] = []

    def metrics(counts: np.ndarray) -> np.ndarray:
        seen.append(_blas_threads_now())
        return counts[:1] / np.maximum(counts[1:2], 1)

    cells = np.array([[1, 0, 1, 1], [1, 1, 1, 1]], dtype=np.float64)
    agreement_table(cells, ["a", "a", "b", "c"], metrics, ["share"], n_boot=20)
    return seen


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)


def test_hot_path_runs_on_one_thread_and_restores_the_callers_pool() -> None:
    with threadpool_limits(3, user_api="blas"):
        seen = _threads_inside_hot_path()
        assert _blas_threads_now() == 3  # the caller's pool is back
    assert seen and set(seen) == {1}


def test_blas_threads_overrides_within_a_block() -> None:
    with threadpool_limits(3, user_api="blas"):
        with blas_threads(2):
            assert blas_thread_limit() == 2
            assert set(_threads_inside_hot_path()) == {2}
        assert blas_thread_limit() == 1
        with blas_threads(None):  # leave the pool as the caller set it
            assert set(_threads_inside_hot_path()) == {3}


def test_environment_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    with threadpool_limits(3, user_api="blas"):
        monkeypatch.setenv(BLAS_THREADS_ENV, "2")
        assert set(_threads_inside_hot_path()) == {2}
        monkeypatch.setenv(BLAS_THREADS_ENV, "inherit")
        assert set(_threads_inside_hot_path()) == {3}
        with blas_threads(1):  # code wins over the environment
            assert set(_threads_inside_hot_path()) == {1}


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                    raw: str) -> None:
    monkeypatch.setenv(BLAS_THREADS_ENV, raw)
    with pytest.raises(ConfigError, match=BLAS_THREADS_ENV):
        _threads_inside_hot_path()


@pytest.mark.parametrize("n", [0, -2, 1.5, True, "2"])
def test_blas_threads_refuses_a_bad_count(n: object) -> None:
    with pytest.raises(ConfigError, match="BLAS threads"), blas_threads(n):  # type: ignore[arg-type]
        pass


def test_nested_uses_set_the_pool_once_and_restore_it_at_the_outermost() -> None:
    with threadpool_limits(3, user_api="blas"):
        with blas_limited():
            assert _blas_threads_now() == 1
            with blas_limited():
                assert _blas_threads_now() == 1
            assert _blas_threads_now() == 1  # the inner exit did not restore
        assert _blas_threads_now() == 3


def test_an_error_inside_restores_the_pool() -> None:
    with threadpool_limits(3, user_api="blas"):
        with pytest.raises(ZeroDivisionError), blas_limited():
            1 / 0  # noqa: B018
        assert _blas_threads_now() == 3


def _limited(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("blas_limited" in ast.unparse(d) for d in fn.decorator_list)


def test_every_matrix_product_of_the_library_runs_under_the_limit() -> None:
    """A new ``@`` in truss_lab must sit in a function (or inside one) that is
    decorated with ``blas_limited``, or it runs on whatever pool the environment has."""
    bare = []
    for path in sorted((ROOT / "truss_lab").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def walk(node: ast.AST, covered: bool, where: str, path: Path = path) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    walk(child, covered or _limited(child), child.name)
                    continue
                if (isinstance(child, ast.BinOp) and isinstance(child.op, ast.MatMult)
                        and not covered):
                    bare.append(f"{path.relative_to(ROOT)}:{child.lineno} ({where})")
                walk(child, covered, where)

        walk(tree, False, "<module>")
    assert not bare, bare
