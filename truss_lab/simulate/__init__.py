"""The seeded simulator of signed verdicts, completions and labels (synthetic data)."""
