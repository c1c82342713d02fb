"""Salience scoring functions, calibrators and junk-lesson detectors."""
