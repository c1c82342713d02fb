"""A simulated model behind an OpenAI-compatible server, for the structured-output question.

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
from typing import Any

__all__ = ["structured_output_reply"]

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
