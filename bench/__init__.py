"""Benchmarks of the embedded store: every figure a ratio to a peer or a ceiling measured in the same run.

    PYTHONPATH=src:. python3 -m bench --quick     # a minute or two; writes bench/results/latest.json
    PYTHONPATH=src:. python3 -m bench --full      # ~10 minutes; also writes BENCHMARKS.md and a chart
    PYTHONPATH=src:. python3 -m bench --smoke     # seconds: tiny counts, only proves the suite runs

Modules, one per kind of workload: ``ceilings`` (what the machine and pure Python can do at all),
``store_bench`` (the store's workloads), ``peers`` (persist-queue, litequeue, Redis), ``profile_put``
(where a put's time goes), ``report`` (JSON, markdown, chart), ``runner`` (modes and orchestration).

The machines these run on are shared and noisy, so absolute numbers mean little: each workload runs in
rounds that alternate ours and the reference (A B B A ...), and a row is the median of ours over the median
of the reference.  Nothing here asserts a speed: the test of this package only checks the rows' shape.
"""
