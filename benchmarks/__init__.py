"""Benchmarks of otel-replay against the physical limit and the alternatives.

``python -m benchmarks`` runs every benchmark and writes ``benchmarks/results.md``. Every
figure is a ratio against a baseline measured in the same run, with the absolute numbers
beside it for context (machines are noisy; ratios travel, absolute numbers do not).
"""
