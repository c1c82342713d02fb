"""The shared builders (tests/builders/) agree with each other and do what they say."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.builders.chains import chain_columns, make_chain
from tests.builders.http_server import CountingResponder, Reply, ScriptedServer
from truss_lab.journal._spec import JournalColumns


def test_both_chain_makers_build_the_same_chain() -> None:
    # chain_columns (the 200k-entry benchmark chain) must be make_chain's chain.
    fast = chain_columns(70, workers=2)
    assert fast.to_pydict() == JournalColumns.from_entries(make_chain(70)).to_pydict()


class _Numbered(CountingResponder):
    def answer(self, body: Any, n: int) -> str:
        return f"{body['messages'][-1]['content']} #{n}"


def _ask(url: str, content: str) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url + "/chat/completions", method="POST",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]})
        .encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def test_a_counting_responder_numbers_each_answered_call_once() -> None:
    # Asked from 8 threads at once, the answered calls are numbered 1..n with no number
    # twice or skipped, and a scripted reply takes no number (what the tests' sums rely on).
    with ScriptedServer(responder=_Numbered(), latency=0.01) as srv:
        srv.add(Reply(status=500, body={"error": "resting"}))
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda i: _ask(srv.base_url, f"q{i}"), range(25)))
    answered = [out for status, out in got if status == 200]
    assert sorted(status for status, _ in got) == [200] * 24 + [500]
    numbers = sorted(int(out["choices"][0]["message"]["content"].rsplit("#")[1])
                     for out in answered)
    assert numbers == list(range(1, 25))
    for out in answered:
        n = int(out["choices"][0]["message"]["content"].rsplit("#")[1])
        assert out["usage"] == {"prompt_tokens": 100 + n, "completion_tokens": n,
                                "total_tokens": 0}
