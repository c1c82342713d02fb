"""Issue 39 items 4-6: inputs that are not files, and TOML nested too deep.

Every input a command reads (tests/builders/inputs.py) is given a named pipe no one writes
to (read at once as the empty input it is), ``/dev/zero`` and ``/dev/urandom`` (under a 2
GiB address-space limit: a reader that grew without bound would end in a MemoryError
traceback), in a real subprocess with a timeout: each ends within it, without a traceback,
a device in one ``error:`` line. A pipe is read
with its format's bound; a TOML file nested 500 deep is one line naming the file.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.builders.inputs import INPUTS, SAMPLE, TOML_INPUTS, deep_toml, run_cli
from tests.builders.stores import copy_db
from truss_lab.core import _files
from truss_lab.core._errors import BadInputError, ConfigError
from truss_lab.core._files import PIPE_WAIT_ENV, open_input, pipe_first_writer_seconds, read_input
from truss_lab.core._toml import MAX_TOML_DEPTH, read_toml


def _one_error_line(p) -> str:  # type: ignore[no-untyped-def]
    out = (p.stderr + p.stdout).strip()
    assert "Traceback" not in out and "MemoryError" not in out, out[-2000:]
    errors = [x for x in out.splitlines() if x.startswith("error: ")]
    assert p.returncode != 0 and len(errors) == 1, out[-2000:]
    return errors[0]


@pytest.fixture(scope="module")
def db(sample_good_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_good_run, tmp_path_factory.mktemp("inputs") / "lab.duckdb")


@pytest.mark.parametrize("name,argv", INPUTS, ids=[n for n, _ in INPUTS])
def test_a_named_pipe_with_no_writer_ends_in_one_line(db: Path, tmp_path: Path, name: str,
                                                      argv) -> None:  # type: ignore[no-untyped-def]
    # Read as the empty input it is (no writer: nothing will come): what an empty file of
    # that format gets, an error line or (an empty journal) nothing imported.
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    # No writer will come: the wait for one (5 s by default) shortened, as a person may.
    p = run_cli(argv(fifo, db), env={PIPE_WAIT_ENV: "0.2"})
    out = (p.stderr + p.stdout).strip()
    assert "Traceback" not in out and str(fifo) in out, out[-2000:]
    assert p.returncode != 0 or "0 added" in out, out


# /dev/urandom is slow-marked: it takes the path /dev/zero takes (refused by its file
# type before a byte is read), ten more command start-ups; make test-slow runs it.
@pytest.mark.parametrize("device", [
    "/dev/zero", pytest.param("/dev/urandom", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name,argv", INPUTS, ids=[n for n, _ in INPUTS])
def test_a_device_is_refused_in_one_line(db: Path, name: str, argv,  # type: ignore[no-untyped-def]
                                         device: str) -> None:
    line = _one_error_line(run_cli(argv(Path(device), db), memory=2 << 30))
    assert "is a device" in line and device in line, line


def test_journal_through_a_pipe_still_imports(db: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "journal.fifo"
    os.mkfifo(fifo)
    data = (SAMPLE / "journal.jsonl").read_bytes()
    # The writer is there before the reader (as with <(...)), and writes later.
    fd = os.open(fifo, os.O_RDWR)

    def write() -> None:
        time.sleep(1)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    t = threading.Thread(target=write)
    t.start()
    p = run_cli(["ingest", "journal", str(fifo), "--db", str(tmp_path / "new.duckdb"),
                 "--keyring", str(SAMPLE / "keys.json")])
    t.join()
    assert p.returncode == 0, p.stderr


def _feed(fifo: Path, data: bytes, hold: float = 0.0) -> threading.Thread:
    fd = os.open(fifo, os.O_RDWR)  # the writer is there before the reader

    def write() -> None:
        with os.fdopen(fd, "wb") as fh:
            try:
                fh.write(data)
                fh.flush()
                time.sleep(hold)
            except BrokenPipeError:
                pass

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_a_pipe_is_read_within_its_bound(tmp_path: Path) -> None:
    fifo = tmp_path / "big.fifo"
    os.mkfifo(fifo)
    t = _feed(fifo, b"x" * 300_000, hold=3)
    with pytest.raises(BadInputError, match="file over 100000 bytes") as exc:
        read_input(fifo, what="a test file", limit=100_000)
    assert exc.value.reason == "too_large"
    small = tmp_path / "small.fifo"
    os.mkfifo(small)
    t = _feed(small, b"y" * 1000, hold=3)  # open until read: a pipe no one holds is gone
    assert read_input(small, what="a test file", limit=100_000) == b"y" * 1000
    t.join(5)


def test_a_pipe_that_sends_nothing_is_given_up(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_files, "PIPE_IDLE_SECONDS", 0.5)
    fifo = tmp_path / "idle.fifo"
    os.mkfifo(fifo)
    t = _feed(fifo, b"", hold=3)  # the writer is there, and writes nothing
    with pytest.raises(BadInputError, match="nothing arrived on the pipe"):
        read_input(fifo, what="a test file", limit=100)
    t.join(5)


def test_a_regular_file_over_its_bound_is_refused_unread(tmp_path: Path) -> None:
    p = tmp_path / "big.txt"
    p.write_bytes(b"z" * 2000)
    with pytest.raises(BadInputError, match="file over 1000 bytes"):
        with open_input(p, what="a test file", limit=1000):
            pass
    with pytest.raises(BadInputError, match="is a folder"):
        read_input(tmp_path, what="a test file", limit=1000)


@pytest.mark.parametrize("name,argv,env", TOML_INPUTS, ids=[n for n, _, _ in TOML_INPUTS])
def test_toml_nested_500_deep_is_one_line(db: Path, tmp_path: Path, name: str, argv,  # type: ignore[no-untyped-def]
                                          env: str | None) -> None:
    p = tmp_path / "deep.toml"
    p.write_text(deep_toml(500), encoding="utf-8")
    line = _one_error_line(run_cli(argv(p, db), env={env: str(p)} if env else None))
    assert "nests" in line and str(p) in line, line


def test_toml_depth_bound(tmp_path: Path) -> None:
    p = tmp_path / "d.toml"
    p.write_text(deep_toml(MAX_TOML_DEPTH - 1), encoding="utf-8")
    assert read_toml(p, what="t")["name"] == "deep"
    p.write_text(deep_toml(MAX_TOML_DEPTH + 1), encoding="utf-8")
    with pytest.raises(BadInputError, match=f"more than {MAX_TOML_DEPTH} levels"):
        read_toml(p, what="t")


def test_the_wait_for_a_pipes_first_writer_is_the_environments_or_five_seconds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PIPE_WAIT_ENV, raising=False)
    assert pipe_first_writer_seconds() == 5.0
    monkeypatch.setenv(PIPE_WAIT_ENV, " 0.25 ")
    assert pipe_first_writer_seconds() == 0.25
    for bad in ("soon", "-1", "nan", "3601"):
        monkeypatch.setenv(PIPE_WAIT_ENV, bad)
        with pytest.raises(ConfigError, match="first writer must be seconds") as exc:
            pipe_first_writer_seconds()
        assert exc.value.field == PIPE_WAIT_ENV and repr(bad) in str(exc.value)


def test_a_bad_pipe_wait_is_one_line_naming_the_variable(db: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    p = run_cli(["ingest", "labels", str(fifo), "--db", str(db)], env={PIPE_WAIT_ENV: "soon"})
    assert PIPE_WAIT_ENV in _one_error_line(p)
