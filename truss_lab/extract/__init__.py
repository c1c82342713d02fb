"""Extraction: providers, prompts, the parser, the ADR 0011 gate, the batch runner."""
