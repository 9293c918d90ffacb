"""The core benchmark's parts (``benchmarks.bench_core`` runs them): loopback sessions of real
processes, an in-process replay for exact bytes, codec timings, demos, and the report."""
