"""The test suite: a package, so that tests, benchmarks and scripts import ``tests.builders``."""
