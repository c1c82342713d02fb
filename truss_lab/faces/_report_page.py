"""The page around a report: inline CSS, the plain-JS verdict filter, HTML helpers.

Everything the page needs is in the file: no stylesheet, script or font is
fetched, and the Content-Security-Policy forbids any request (images are
``data:`` URIs). Every value reaches the page through :func:`esc`
(``html.escape``); the script reads and hides elements but never writes
markup (no ``innerHTML``), so a lesson holding ``<script>`` stays text.
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CSP", "PAGE_SIZE", "esc", "fmt", "page", "png_img", "table"]

#: Verdicts shown per page of the verdict list (the script paginates the matches).
PAGE_SIZE = 25

#: No network, no plugins: inline style and script, images from data: URIs only.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")


def esc(value: Any) -> str:
    """``html.escape`` of ``str(value)`` (quotes too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    """A cell as text: floats to 4 significant digits, NaN/None as an empty cell."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, (np.bool_, bool)):
        return "yes" if value else "no"
    return str(value)


def table(df: pd.DataFrame, *, index: bool = False, cls: str = "") -> str:
    """An escaped HTML table of ``df`` (cells formatted by :func:`fmt`)."""
    frame = df.reset_index() if index else df
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(fmt(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False, name=None)
    )
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def png_img(fig: Any, alt: str, *, dpi: int = 90) -> str:
    """``fig`` as an inline base64 PNG ``<img>`` (no file beside the report)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0 auto;max-width:1200px;
 padding:0 1.2em 3em;color:#1d1d1f}
h1{margin:.8em 0 .2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em}table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f6}img.plot{max-width:100%;height:auto;display:block;margin:.5em 0}
.ok{color:#1a7f37;font-weight:bold}.bad{color:#c62828;font-weight:bold}.muted{color:#666}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;padding:.5em;
 max-height:20em;overflow:auto;font-size:12px}
details.verdict{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.2em .6em}
details.verdict>summary{cursor:pointer}.badge{display:inline-block;padding:0 .5em;
 border-radius:3px;background:#eee;font-size:12px}.badge.pass{background:#d7f5dd}
.badge.fail{background:#fbd9d9}.badge.err{background:#ffe8b3}.badge.ref{background:#dde8fb}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #eee}
#filters input[type=search]{width:24em}.lesson-text{max-width:40em}
"""

_JS = """
(function () {
  "use strict";
  var PAGE = %(page)d;
  var items = Array.prototype.slice.call(document.querySelectorAll("details.verdict"));
  var text = items.map(function (el) { return el.textContent.toLowerCase(); });
  var q = document.getElementById("verdict-filter");
  var outcome = document.getElementById("outcome-filter");
  var errorsOnly = document.getElementById("errors-only");
  var refsOnly = document.getElementById("refs-only");
  var status = document.getElementById("filter-status");
  var prev = document.getElementById("page-prev");
  var next = document.getElementById("page-next");
  var page = 0;
  function matches(i) {
    var el = items[i];
    var needle = q.value.trim().toLowerCase();
    if (needle && text[i].indexOf(needle) < 0) return false;
    if (outcome.value && el.dataset.outcome !== outcome.value) return false;
    if (errorsOnly.checked && el.dataset.errors === "0") return false;
    if (refsOnly.checked && el.dataset.refs === "0") return false;
    return true;
  }
  function render() {
    var hits = [];
    for (var i = 0; i < items.length; i++) { if (matches(i)) hits.push(i); }
    var pages = Math.max(1, Math.ceil(hits.length / PAGE));
    if (page >= pages) page = pages - 1;
    var lo = page * PAGE, hi = lo + PAGE, shown = {};
    hits.slice(lo, hi).forEach(function (i) { shown[i] = true; });
    items.forEach(function (el, i) { el.hidden = !shown[i]; });
    status.textContent = hits.length + " of " + items.length + " verdicts match; page " +
      (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function reset() { page = 0; render(); }
  q.addEventListener("input", reset);
  outcome.addEventListener("change", reset);
  errorsOnly.addEventListener("change", reset);
  refsOnly.addEventListener("change", reset);
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  render();
})();
"""


def page(title: str, body: str) -> str:
    """The whole document: head (CSP, inline CSS), ``body`` (already escaped HTML), script."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{body}"
        f"<script>{_JS % {'page': PAGE_SIZE}}</script></body></html>\n"
    )
