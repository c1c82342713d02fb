"""Shared builders of the tests, the benchmarks and ``scripts/reliability.py``.

- :mod:`tests.builders.chains`: signing keys, the verdict payload of entry ``i``,
  signed chains (as entries or as columns), journal lines and files;
- :mod:`tests.builders.tampers`: one-field-tampered copies of a chain, each with
  the reason, seq and line verification must report;
- :mod:`tests.builders.stores`: a fresh in-memory store, the bundled sample
  or a simulated dataset loaded into a store or a template database file, and
  ``copy_db`` (a writable copy of a template: far cheaper than ingesting);
- :mod:`tests.builders.cli`: ``invoke(*args)``, the ``truss-lab`` command line
  run in-process (``invoke_json`` parses a ``--json`` output);
- :mod:`tests.builders.profiles`: the Hypothesis profiles (``default`` for
  ``make test``, ``thorough`` for ``make test-slow``) and ``examples(N)``;
- :mod:`tests.builders.http_server`: a scriptable OpenAI-compatible server
  on 127.0.0.1;
- :mod:`tests.builders.echo`: that server echoing the caller's API key in the
  answer's ``model`` or a lesson's ``evidence``, and ``leaks`` (the files that
  hold a needle);
- :mod:`tests.builders.report`: the sample with a ``<script>`` lesson, for the
  report tests.
- :mod:`tests.builders.held`: ``watched``, a stream's batches with how many earlier
  ones are still alive as each is read (the streamed readers' memory tests);

``tests/conftest.py`` holds the fixtures every test file shares: ``store`` (a
fresh in-memory store), ``key``, ``verdict``, and the bundled sample ingested
once per session into three template files (``sample_unlabelled``,
``sample_labelled``, ``sample_full``) that tests copy with ``copy_db``.

Benchmarks and scripts import them with the repository root on ``sys.path``:
run them as modules from the root (``python -m scripts.reliability``), or by
path with ``PYTHONPATH`` set to the root, as ``scripts/bench_all.py`` does.
"""
