"""Field names and bounds of the interchange formats that the evaluation reads too.

Here, in a module that imports nothing, so that scoring and evaluation (which cut a
reference's text to its bound and read the match labels' inclusion probabilities) load
without the readers' pydantic models and CSV machinery: a ``truss-lab sweep`` of stored
data never parses a file (issue 38). The readers (:mod:`~truss_lab.ingest._references`,
:mod:`~truss_lab.ingest._match_labels`) take them from here.
"""

from __future__ import annotations

__all__ = [
    "INCLUSION",
    "MATCH_LABEL_FIELDS",
    "MAX_REFERENCE_EVIDENCE",
    "MAX_REFERENCE_NAME",
    "MAX_REFERENCE_TEXT",
]

# Bounds on a reference line's fields (docs/reference/formats.md; ``truss-lab schema
# references`` shows them): a reference is a sentence or a paragraph, so a far longer value
# is a mistake (a pasted file, a generated blob) that would swell every table and report it
# reaches. It is refused like any bad value: an error naming the line and the field.
MAX_REFERENCE_TEXT = 16_384
"""Most characters of a reference's ``text``."""
MAX_REFERENCE_NAME = 256
"""Most characters of a ``reference_id``, an ``annotator`` or one ``evidence`` token."""
MAX_REFERENCE_EVIDENCE = 64
"""Most ``evidence`` tokens on one reference."""

MATCH_LABEL_FIELDS: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index",
                                       "reference_id", "annotator")
"""The match labels' CSV header, in order (``annotator`` may be left out of the header)."""
INCLUSION = "inclusion_probability"
"""The optional last match-label column: the probability the row's verdict was drawn."""
