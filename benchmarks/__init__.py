"""Benchmarks: they print figures beside the baselines measured in the same run."""
