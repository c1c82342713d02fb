"""Bringing data in: strict readers of completions and labels, their JSON Schemas,
ingest into the store."""
