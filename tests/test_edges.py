"""Issue #28 items 5-8: the edges an attacker reached with a traceback, a network call or a
lost write; each is refused in one line naming what and where, with a non-zero exit.

Each test is a reproduction from the issue, through the real CLI, on real files.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from truss_lab.core._errors import BadInputError, StoreError
from truss_lab.store._store import Store, open_store

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample"


def _one_line_error(r: object, code: int = 2) -> str:
    out = r.output  # type: ignore[attr-defined]
    assert r.exit_code == code, out  # type: ignore[attr-defined]
    assert out.startswith("error: ") and len(out.strip().splitlines()) == 1, out
    assert "Traceback" not in out
    return out


# -- item 5: a remote --db is refused before DuckDB (and its extension download) sees it -------


@pytest.mark.parametrize("scheme", ["http://", "https://", "s3://", "md:", "motherduck:",
                                    "sqlite:"])
def test_remote_db_is_refused_without_a_connection(tmp_path: Path, monkeypatch,
                                                   scheme: str) -> None:
    # A real listener on 127.0.0.1: an http(s) address pointing at it would be connected to
    # if DuckDB (httpfs) got the path; no connection may arrive.
    monkeypatch.chdir(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        db = (f"{scheme}127.0.0.1:{port}/lab.duckdb" if scheme.endswith("//")
              else f"{scheme}lab.duckdb")
        for args in (("init", "--db", db), ("runs", "--db", db), ("verify", "--db", db)):
            out = _one_line_error(invoke(*args))
            assert "not a local file" in out and db in out
        with pytest.raises(BlockingIOError):
            listener.accept()
    with pytest.raises(StoreError, match="not a local file"):
        open_store(db, read_only=True, must_exist=True)
    with pytest.raises(StoreError, match="not a local file"):
        Store(db)
    assert list(tmp_path.iterdir()) == []  # nothing created locally either


def test_local_file_with_a_colon_still_opens(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "--db", "./md:lab.duckdb").exit_code == 0
    assert (tmp_path / "md:lab.duckdb").is_file()


# -- item 6: every JSON input goes through the one strict reader (depth bounded) ----------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [1000, 3000, 100_000])
def test_deep_keyring_is_one_line_and_creates_no_database(tmp_path: Path, depth: int) -> None:
    ring = tmp_path / "keys.json"
    ring.write_text('{"a": ' + _deep(depth) + "}")
    db = tmp_path / "lab.duckdb"
    r = invoke("ingest", "journal", SAMPLE / "journal.jsonl", "--keyring", ring, "--db", db)
    out = _one_line_error(r)
    assert str(ring) in out and "nested deeper than 200 levels" in out
    assert not db.exists()
    r = invoke("keys", "generate", "--key-id", "me", "--out", tmp_path / "me.key",
               "--keyring", ring)
    assert "nested deeper than 200 levels" in _one_line_error(r)
    assert not (tmp_path / "me.key").exists()


def test_duplicated_key_id_still_named(tmp_path: Path) -> None:
    ring = tmp_path / "dup.json"
    ring.write_text('{"a": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", '
                    '"a": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}')
    r = invoke("ingest", "journal", SAMPLE / "journal.jsonl", "--keyring", ring, "--db",
               tmp_path / "lab.duckdb")
    assert "field 'a': key id appears twice" in _one_line_error(r)


@pytest.mark.parametrize("depth", [1000, 3000])
def test_deep_refs_file_is_one_line_naming_the_line(sample_unlabelled: Path, tmp_path: Path,
                                                    depth: int) -> None:
    from tests.builders.stores import copy_db

    db = copy_db(sample_unlabelled, tmp_path / "lab.duckdb")
    with Store(db, read_only=True) as s:
        seq, h = s.sql("SELECT seq, hash FROM journal ORDER BY seq LIMIT 1").fetchone()
        runs = s.counts()["extraction_runs"]
    refs = tmp_path / "refs.jsonl"
    refs.write_text(f'{{"seq": {seq}, "hash": "{h}"}}\n'
                    f'{{"seq": {seq}, "hash": "{h}", "x": {_deep(depth)}}}\n')
    r = invoke("extract", "--db", db, "--extractor", "heuristic", "--policy", "on", "--quiet",
               "--verdicts", refs)
    out = _one_line_error(r)
    assert f"{refs}, line 2" in out and "nested deeper than 200 levels" in out
    with Store(db, read_only=True) as s:
        assert s.counts()["extraction_runs"] == runs


def test_deep_key_file_is_one_line(sample_unlabelled: Path, tmp_path: Path) -> None:
    from tests.builders.stores import copy_db

    key = tmp_path / "deep.key"
    key.write_text('{"key_id": "a", "ed25519_seed": ' + _deep(3000) + "}")
    db = copy_db(sample_unlabelled, tmp_path / "lab.duckdb")
    r = invoke("propose", "--db", db, "--run", "x", "--key", key)
    assert "not a truss_lab key file (nested deeper than 200 levels)" in _one_line_error(r)


# -- item 7: a full disk or a failing device is one line and a non-zero exit -------------------


@pytest.fixture(scope="module")
def run_db(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.builders.stores import copy_db
    from truss_lab.core._config import MemoryConfig
    from truss_lab.extract._batch import run_extraction
    from truss_lab.extract._extractor import Extractor

    path = copy_db(sample_labelled, tmp_path_factory.mktemp("edges") / "lab.duckdb")
    with Store(path) as s:
        run_extraction(s, Extractor.replay(s, "sim-good-v1"),
                       MemoryConfig(lesson_extraction="model-scored"), progress=False,
                       write_memory=False, run_id="r")
    return path


@contextlib.contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes fail (EFBIG) as on a full disk: a real failing write on
    a regular file, without a mount (Python ignores SIGXFSZ, so the write just fails)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_sweep_to_a_failing_device_is_refused(run_db: Path, option: str) -> None:
    r = invoke("sweep", "--db", run_db, "--run", "r", "--n-boot", "20", option, "/dev/full")
    out = _one_line_error(r)
    assert f"/dev/full, field '{option}': is not a regular file" in out


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_sweep_onto_a_full_disk_is_one_line_and_leaves_nothing(run_db: Path, tmp_path: Path,
                                                               option: str) -> None:
    out_file = tmp_path / ("s.csv" if option == "--csv" else "s.png")
    out_file.write_bytes(b"before")  # an older file stays as it was
    with _file_size_limit(1000):
        r = invoke("sweep", "--db", run_db, "--run", "r", "--n-boot", "20", option, out_file)
    out = _one_line_error(r)
    assert f"{out_file}, field '{option}': cannot write: File too large; nothing written" in out
    assert out_file.read_bytes() == b"before"
    assert [p.name for p in tmp_path.iterdir()] == [out_file.name]  # no temporary left
    r = invoke("sweep", "--db", run_db, "--run", "r", "--n-boot", "20", option, out_file)
    assert r.exit_code == 0, r.output
    assert out_file.stat().st_size > 1000
    assert oct(out_file.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- item 8: an output path is a regular file or absent; an export goes into a new folder ------


def _queue(db: Path, out: Path | str) -> object:
    return invoke("queue", "r", "--db", db, "--out", out, "--n-lessons", "5", "--n-boot", "20")


def test_queue_refuses_a_device_and_a_symlink(run_db: Path, tmp_path: Path) -> None:
    out = _one_line_error(_queue(run_db, "/dev/null"))
    assert "/dev/null, field '--out': is not a regular file" in out
    assert Path("/dev/null").is_char_device()  # still the device, not a CSV file
    target = tmp_path / "labels.csv"
    target.write_text("mine\n")
    for link, to in ((tmp_path / "q.csv", target), (tmp_path / "dangling.csv",
                                                    tmp_path / "nowhere.csv")):
        link.symlink_to(to)
        out = _one_line_error(_queue(run_db, link))
        assert f"{link}, field '--out': is a symbolic link (to {to})" in out
        assert link.is_symlink() and os.readlink(link) == str(to)
    assert target.read_text() == "mine\n" and not (tmp_path / "nowhere.csv").exists()
    r = _queue(run_db, tmp_path / "new.csv")  # a regular file (or none) is written
    assert r.exit_code == 0, r.output


def test_queue_onto_a_full_disk_leaves_the_old_file(run_db: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "queue.csv"
    out_file.write_text("before\n")
    with _file_size_limit(200):
        out = _one_line_error(_queue(run_db, out_file))
    assert "cannot write: File too large; nothing written" in out
    assert out_file.read_text() == "before\n" and len(list(tmp_path.iterdir())) == 1


@pytest.fixture
def export_db(sample_unlabelled: Path, tmp_path: Path) -> Path:
    from tests.builders.stores import copy_db

    return copy_db(sample_unlabelled, tmp_path / "lab.duckdb")


def test_export_refuses_a_symlink_a_file_and_a_folder_that_holds_files(
        export_db: Path, tmp_path: Path) -> None:
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert "is a symbolic link" in _one_line_error(invoke("export", "--db", export_db,
                                                          "--out", dangling))
    assert not (tmp_path / "nowhere").exists()
    linked = tmp_path / "linked"
    (tmp_path / "empty").mkdir()
    linked.symlink_to(tmp_path / "empty")
    assert "is a symbolic link" in _one_line_error(invoke("export", "--db", export_db,
                                                          "--out", linked))
    assert not any((tmp_path / "empty").iterdir())
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    from truss_lab.store._export import export_store

    with Store(export_db, read_only=True) as s, pytest.raises(BadInputError,
                                                               match="is not a folder"):
        export_store(s, a_file)  # the CLI's click.Path refuses it before
    assert a_file.read_text() == "x"
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("mine")
    out = _one_line_error(invoke("export", "--db", export_db, "--out", home))
    assert f"{home}: holds other files" in out
    assert [p.name for p in home.iterdir()] == ["thesis.tex"]


def test_export_into_an_empty_folder_and_whole_or_nothing(export_db: Path,
                                                          tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = invoke("export", "--db", export_db, "--out", empty)
    assert r.exit_code == 0, r.output
    assert (empty / "manifest.json").is_file()
    assert oct(empty.stat().st_mode & 0o777) == oct(0o777 & ~_umask())
    full = tmp_path / "full"
    with _file_size_limit(4000):
        out = _one_line_error(invoke("export", "--db", export_db, "--format", "csv",
                                     "--out", full))
    assert f"{full}: cannot write the export" in out and "nothing written" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "lab.duckdb"]


def test_keys_generate_onto_a_full_disk_leaves_no_truncated_key(tmp_path: Path) -> None:
    # Was an OSError traceback and a 60-byte key file holding half a seed.
    key, ring = tmp_path / "me.key", tmp_path / "keys.json"
    with _file_size_limit(60):
        out = _one_line_error(invoke("keys", "generate", "--key-id", "me", "--out", key,
                                     "--keyring", ring))
    assert f"{key}: cannot write: File too large; nothing written" in out
    assert list(tmp_path.iterdir()) == []
    assert invoke("keys", "generate", "--key-id", "me", "--out", key, "--keyring",
                  ring).exit_code == 0
    assert key.stat().st_mode & 0o777 == 0o600
    assert ring.stat().st_mode & 0o777 == 0o666 & ~_umask()
    before = ring.read_text()
    # The second key fits, the keyring naming both does not: the old ring stays, and the
    # key it could not name is not left behind.
    with _file_size_limit(key.stat().st_size + 8):
        out = _one_line_error(invoke("keys", "generate", "--key-id", "you", "--out",
                                     tmp_path / "you.key", "--keyring", ring))
    assert f"{ring}: cannot write: File too large; nothing written" in out
    assert ring.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.json", "me.key"]


# -- item 8, follow-up: the report and the simulator's folder, on the same helper -------------


def _not_regular_outputs(tmp_path: Path) -> list[tuple[Path, str]]:
    """Real paths no output may be written at: a device, a pipe, a link to a file, a dangling
    link and a folder; with the start of the one line each is refused with."""
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    mine = tmp_path / "mine.html"
    mine.write_text("mine\n")
    link, dangling = tmp_path / "link.html", tmp_path / "dangling.html"
    link.symlink_to(mine)
    dangling.symlink_to(tmp_path / "nowhere.html")
    folder = tmp_path / "folder"
    folder.mkdir()
    return [(Path("/dev/null"), "is not a regular file"), (fifo, "is not a regular file"),
            (link, f"is a symbolic link (to {mine})"),
            (dangling, f"is a symbolic link (to {tmp_path / 'nowhere.html'})"),
            (folder, "is a directory")]


def _untouched(tmp_path: Path) -> None:
    assert Path("/dev/null").is_char_device() and (tmp_path / "pipe.html").is_fifo()
    assert (tmp_path / "mine.html").read_text() == "mine\n"
    assert not (tmp_path / "nowhere.html").exists() and not any((tmp_path / "folder").iterdir())
    assert {p.name for p in tmp_path.iterdir()} - {"py"} == {
        "dangling.html", "folder", "link.html", "mine.html", "pipe.html"}


def test_report_refuses_a_device_a_pipe_a_link_and_a_folder(run_db: Path,
                                                             tmp_path: Path) -> None:
    # Was: the report written through the link (onto mine.html) and onto /dev/null, exit 0.
    from truss_lab.faces import write_report

    for path, why in _not_regular_outputs(tmp_path):
        out = _one_line_error(invoke("report", "r", "--db", run_db, "--out", path,
                                     "--n-boot", "20", "--n-verdicts", "5"))
        assert why in out and str(path) in out
    _untouched(tmp_path)
    py = tmp_path / "py"  # the same from Python, where the folder is the helper's to refuse
    py.mkdir()
    with Store(run_db, read_only=True) as s:
        for path, why in _not_regular_outputs(py):
            with pytest.raises(BadInputError) as err:
                write_report(s, ["r"], path, n_boot=20, max_verdicts=5)
            assert (why if path.name != "folder" else "is a folder") in str(err.value)
    _untouched(py)


# Slow (a whole report twice, about 30 s of CPU): the writer it fails in, write_output, is
# the one sweep's and queue's full-disk tests above check under make test.
@pytest.mark.slow
def test_report_onto_a_full_disk_leaves_the_old_file(run_db: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "report.html"
    out_file.write_text("before\n")
    with _file_size_limit(5000):
        out = _one_line_error(invoke("report", "r", "--db", run_db, "--out", out_file,
                                     "--n-boot", "20", "--n-verdicts", "5"))
    assert f"{out_file}: cannot write: File too large; nothing written" in out
    assert out_file.read_text() == "before\n" and len(list(tmp_path.iterdir())) == 1
    r = invoke("report", "r", "--db", run_db, "--out", out_file, "--n-boot", "20",
               "--n-verdicts", "5")
    assert r.exit_code == 0, r.output
    assert out_file.read_text().startswith("<!DOCTYPE html>")
    assert oct(out_file.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def test_python_writers_refuse_a_link_and_a_pipe(run_db: Path, tmp_path: Path) -> None:
    # Was: the rename replaced the link or the pipe with a regular file (the CLI checked
    # first; the library did not).
    from truss_lab.evaluate import labelling_queue
    from truss_lab.ingest import write_label_queue

    with Store(run_db, read_only=True) as s:
        q = labelling_queue(s, "r", n=3)
    for path, why in _not_regular_outputs(tmp_path)[1:4]:
        with pytest.raises(BadInputError, match=re.escape(f"{path}: {why}")):
            write_label_queue(q, path)
    _untouched(tmp_path)
    assert write_label_queue(q, tmp_path / "q.csv") == 3


def _simulate(out: Path | str, *more: str) -> object:
    return invoke("simulate", "--out", out, "--n-verdicts", "30", *more)


def _digests(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_simulate_refuses_a_link_a_file_and_writes_nothing_through(tmp_path: Path) -> None:
    from truss_lab.simulate import simulate
    from truss_lab.simulate._simulate import main

    empty = tmp_path / "empty"
    empty.mkdir()
    linked, dangling = tmp_path / "linked", tmp_path / "dangling"
    linked.symlink_to(empty)
    dangling.symlink_to(tmp_path / "nowhere")
    for link, to in ((linked, empty), (dangling, tmp_path / "nowhere")):
        out = _one_line_error(_simulate(link))
        assert f"{link}: is a symbolic link (to {to}); name a folder for the dataset" in out
        assert main(["--out", str(link), "--runs", "30"]) == 2
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    assert "is a file" in _one_line_error(_simulate(notes))  # click.Path(file_okay=False)
    with pytest.raises(BadInputError, match="exists and is not a folder"):
        simulate(notes, runs=30, seed=1)
    assert not any(empty.iterdir()) and not (tmp_path / "nowhere").exists()
    assert notes.read_text() == "x"


def test_simulate_never_mixes_two_datasets(tmp_path: Path) -> None:
    d = tmp_path / "sim"
    assert _simulate(d, "--random-state", "1").exit_code == 0
    (d / "DATASHEET.md").write_text("mine")
    before = _digests(d)
    # The same seed rewrites its own files, the same bytes; a file of another name stays.
    assert _simulate(d, "--random-state", "1").exit_code == 0
    assert _digests(d) == before
    # Another seed is another dataset: refused, every file as it was.
    out = _one_line_error(_simulate(d, "--random-state", "2"))
    assert (f"{d}: holds another dataset's files (journal.jsonl, keys.json and 7 more; no "
            "keys.json of seed 2's test key)") in out and "--force" in out
    assert _digests(d) == before
    r = _simulate(d, "--random-state", "2", "--force")
    assert r.exit_code == 0, r.output
    after = _digests(d)
    assert after["DATASHEET.md"] == b"mine" and after.keys() == before.keys()
    assert after["journal.jsonl"] != before["journal.jsonl"]
    # A folder of one's own with a file of a simulator's name, and no keys.json: refused.
    own = tmp_path / "own"
    own.mkdir()
    (own / "labels.csv").write_text("my labels\n")
    assert "holds another dataset's files (labels.csv; " in _one_line_error(_simulate(own))
    assert [p.name for p in own.iterdir()] == ["labels.csv"]
    assert (own / "labels.csv").read_text() == "my labels\n"


def test_simulate_never_writes_through_a_link_in_its_folder(tmp_path: Path) -> None:
    d = tmp_path / "sim"
    assert _simulate(d).exit_code == 0
    mine = tmp_path / "mine.csv"
    mine.write_text("mine\n")
    (d / "labels.csv").unlink()
    (d / "labels.csv").symlink_to(mine)
    for more in ((), ("--force",)):
        out = _one_line_error(_simulate(d, *more))
        assert f"{d / 'labels.csv'}: is a symbolic link (to {mine})" in out
    assert mine.read_text() == "mine\n" and (d / "labels.csv").is_symlink()


def test_simulate_k_sample_files_of_another_draw(tmp_path: Path) -> None:
    from truss_lab.simulate import simulate

    d = tmp_path / "sim"
    simulate(d, runs=20, seed=3, samples=2)
    with pytest.raises(BadInputError, match=r"completions_samples\.jsonl, truth_samples\.csv "
                                            "of a draw with several samples per verdict"):
        simulate(d, runs=20, seed=3)
    assert (d / "truth_samples.csv").exists()
    simulate(d, runs=20, seed=3, force=True)
    assert not (d / "truth_samples.csv").exists()
    assert not (d / "completions_samples.jsonl").exists()


def test_simulate_onto_a_full_disk_leaves_nothing(tmp_path: Path) -> None:
    d = tmp_path / "new"
    with _file_size_limit(1000):
        out = _one_line_error(_simulate(d))
    assert "cannot write: File too large; nothing written" in out
    assert list(tmp_path.iterdir()) == []  # not even the folder it would have made
    d.mkdir()
    (d / "DATASHEET.md").write_text("mine")
    assert _simulate(d, "--random-state", "4").exit_code == 0
    before = _digests(d)
    with _file_size_limit(1000):
        _one_line_error(_simulate(d, "--random-state", "5", "--force"))
    assert _digests(d) == before  # the old dataset whole, no temporary file


def test_sample_never_writes_through_a_link(tmp_path: Path) -> None:
    # Was: a dangling link at DIR/journal.jsonl passed the "already there" check and the
    # copy wrote the journal wherever it pointed.
    d = tmp_path / "sample"
    d.mkdir()
    (d / "journal.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    out = _one_line_error(invoke("sample", "--out", d))
    assert f"{d}: journal.jsonl already there; refusing to overwrite" in out
    assert not (tmp_path / "elsewhere.jsonl").exists()
    assert [p.name for p in d.iterdir()] == ["journal.jsonl"]
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path / "nowhere")
    assert "is a symbolic link" in _one_line_error(invoke("sample", "--out", linked))
    assert not (tmp_path / "nowhere").exists()
    fresh = tmp_path / "fresh"
    assert invoke("sample", "--out", fresh).exit_code == 0
    assert _digests(fresh) == _digests(SAMPLE)


# -- item 6, the same edge on the way in from a server: deep JSON in an answer ---------------------


def test_a_deeply_nested_server_body_is_a_failed_call(sample_unlabelled: Path,
                                                      tmp_path: Path) -> None:
    from tests.builders.http_server import Reply, ScriptedServer
    from tests.builders.stores import copy_db

    db = copy_db(sample_unlabelled, tmp_path / "lab.duckdb")
    deep = '{"x": ' + _deep(5000) + "}"
    with ScriptedServer() as srv:
        srv.add(*[Reply(body=deep)] * 4)
        r = invoke("extract", "--db", db, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--quiet", "--verdicts", "seq<=2",
                   "--max-error-share", "1", env={"OPENAI_API_KEY": "sk-test"})
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    with Store(db, read_only=True) as s:
        errors = s.sql("SELECT message FROM verdict_errors").fetchall()
    assert len(errors) == 2 and all("expected a JSON chat-completions body" in e
                                    for (e,) in errors), errors


def test_a_deeply_nested_match_answer_is_a_parse_error() -> None:
    from truss_lab.evaluate._judges import parse_similarities

    mat, why = parse_similarities('{"pairs": ' + _deep(5000) + "}", ["L0"], ["R0"])
    assert mat is None and why == "not one JSON object (nested too deep)"
