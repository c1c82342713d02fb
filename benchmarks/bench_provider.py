"""Throughput of OpenAICompatibleProvider.complete_many against a local server.

A real OpenAI-compatible HTTP server (tests/builders/http_server.py, in its own
process so it does not share our GIL) answers every request after 100 ms.
1000 requests at concurrency 32 ideally take 1000 / 32 x 0.1 s = 3.125 s;
the ratio wall / ideal shows the client's overhead (retries, pooling,
thread hand-offs). Goal: ratio <= 1.25. The best of ``--repeat`` runs (3; ``--quick``: 1)
against the same server: on a shared machine one run meets whatever else runs then.

    .venv/bin/python -m benchmarks.bench_provider [--quick] [--n N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._result import result
from truss_lab.extract._providers import (
    ChatMessage,
    CompletionRecorder,
    CompletionRequest,
    OpenAICompatibleProvider,
)

ROOT = Path(__file__).resolve().parent.parent

GOAL = 1.25


def requests(n: int) -> list[CompletionRequest]:
    return [
        CompletionRequest(
            messages=(
                ChatMessage(role="system", content="Extract durable lessons as JSON."),
                ChatMessage(role="user", content=f"Verdict {i}: job migrated, tz regressed."),
            ),
            model="bench-model",
            parameters={"temperature": 0},
            verdict_hash=hashlib.sha256(str(i).encode()).hexdigest(),
            extractor="bench/lesson-v1",
            prompt_version="lesson-v1",
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 requests instead of 1000")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=None, help="runs, best kept (3)")
    args = parser.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    n = args.n or (200 if args.quick else 1000)
    c = args.concurrency

    server = subprocess.Popen(
        [sys.executable, "-m", "tests.builders.http_server", "--latency", str(args.latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        walls, failures = [], []
        for _ in range(repeat):  # a new provider (its own pool, recorder) per run
            recorder = CompletionRecorder()
            with OpenAICompatibleProvider(
                base_url, "bench-model", max_concurrency=c, recorder=recorder, timeout=10.0
            ) as provider:
                reqs = requests(n)
                start = time.perf_counter()
                results = provider.complete_many(reqs, concurrency=c)
                walls.append(time.perf_counter() - start)
            failures += [r for r in results if isinstance(r, Exception)]
        wall = min(walls)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=10)

    ideal = n / c * args.latency
    ratio = wall / ideal
    print(f"requests          {n} at concurrency {c}, server latency {args.latency * 1000:.0f} ms")
    print(f"failures          {len(failures)}; recorded {len(recorder)}")
    print(f"wall time         {wall:.3f} s (best of {repeat}: "
          f"{', '.join(f'{w:.3f}' for w in walls)})")
    print(f"ideal (baseline)  {ideal:.3f} s  (= {n} / {c} x {args.latency} s)")
    result(f"provider wall / ideal ({n} req, conc. {c}, {args.latency * 1000:.0f} ms)", wall,
           "s", baseline=ideal, ratio=ratio, goal=f"<= {GOAL}",
           baseline_name="n / concurrency x server latency", note=f"best of {repeat}")
    if failures:
        print(f"first failure: {failures[0]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
