"""Evaluation: sweeps, threshold choice, calibration, bootstrap, comparison, agreement."""
