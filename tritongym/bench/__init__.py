"""Benchmark reports: metrics over trajectory records (fast_p, pass@k, per-turn and best-by-turn
curves), ``summary.json``, ``report.md`` and plots (docs/bench.md)."""
