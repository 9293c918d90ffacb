"""Reproducible measurements; each writes its results as Markdown tables.

Run them from the repository root as modules, with the project's virtual environment
(``python -m benchmarks.bench_core --help``). They share ``benchmarks._common`` (statistics,
tables, the machine, child processes) and read their acceptance bounds from
``benchmarks.targets``; the virtual LAN and free ports come from the dev-only ``testbed``
package, which the tests use too. Neither this package nor ``testbed`` ships in the wheel.
"""
