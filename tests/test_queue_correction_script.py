"""scripts/queue_correction.py (issue 36, item 1): on the bundled sample the queue's band
labels are refused and its whole-verdict labels land within, and the page shows what the
script prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import queue_correction

PAGE = Path(__file__).resolve().parent.parent / "docs" / "explanation" / "ppi.md"


def test_the_page_shows_the_script_s_command() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert "`nice -n 10 .venv/bin/python -m scripts.queue_correction`" in text
    assert "python -m scripts.queue_correction" in (queue_correction.__doc__ or "")


@pytest.mark.slow
def test_band_labels_are_refused_whole_verdicts_land_within_as_the_page_says(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers a page shows come from the command it shows (about 7 minutes loaded)."""
    assert queue_correction.main([]) == 0  # band refused, whole verdicts within
    printed = capsys.readouterr().out.splitlines()[:-1]  # less the JSON summary
    text = PAGE.read_text(encoding="utf-8")
    block = text[text.index("```text\nevery gold label"):].split("```")[1]
    assert printed == block.strip("\n").removeprefix("text\n").splitlines()
