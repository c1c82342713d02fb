"""Parse-failure rate with and without ``response_format``, through a real local server.

A simulated model (:func:`truss_lab.simulate._completions.structured_output_reply`,
malformed free text on a share of prompts, schema-valid under ``json_schema``)
answers on 127.0.0.1 (``tests/builders/http_server.py``); the bundled sample's
verdicts are extracted live by the real OpenAI-compatible client once per
``response_format`` arm, and the share of verdicts whose completion failed to
parse (``verdict_errors``, stage ``parse``) is printed per arm.

    .venv/bin/python scripts/measure_parse_failures.py [--verdicts 300] [--malformed-rate 0.2]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.builders

import truss_lab as tl
from tests.builders.http_server import ScriptedServer
from truss_lab.extract import Extractor
from truss_lab.extract._extractor import ExtractorConfig
from truss_lab.simulate._completions import structured_output_reply

ARMS = ("none", "json_object", "json_schema")


def measure(n_verdicts: int, malformed_rate: float) -> list[dict]:
    rows = []
    reply = functools.partial(structured_output_reply, malformed_rate=malformed_rate)
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(responder=reply) as srv:
        store = tl.load_sample(Path(tmp) / "lab.duckdb")
        for arm in ARMS:
            config = ExtractorConfig(model="sim-structured", response_format=arm)
            ext = Extractor.openai(srv.base_url, "sim-structured", config=config,
                                   max_retries=0)
            run = tl.run_extraction(store, ext, tl.MemoryConfig(lesson_extraction="on"),
                                    verdicts="seq <= ?", params=[n_verdicts],
                                    write_memory=False, progress=False, run_id=f"rf-{arm}")
            reasons = dict(store.sql(
                "SELECT reason, count(*) FROM verdict_errors WHERE run_id = ? AND "
                "stage = 'parse' GROUP BY reason ORDER BY reason", [run.run_id]).fetchall())
            n_parse = sum(reasons.values())
            rows.append({"response_format": arm, "verdicts": run.n_verdicts,
                         "parse_failures": n_parse,
                         "parse_failure_rate": round(n_parse / run.n_verdicts, 4),
                         "by_reason": reasons})
        store.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=300, help="verdicts (seq <= N) per arm")
    ap.add_argument("--malformed-rate", type=float, default=0.2,
                    help="share of prompts the simulated model answers malformed")
    args = ap.parse_args()
    for row in measure(args.verdicts, args.malformed_rate):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
