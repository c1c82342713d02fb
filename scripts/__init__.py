"""Repository scripts, runnable as ``python -m scripts.NAME`` from the repository root."""
