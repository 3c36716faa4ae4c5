"""Sweeps: many workloads from one specification, run on every core or a Dask cluster, one table.

``spec`` reads and checks a sweep specification and lists its cases; ``worker`` runs one case
(conclusions only: no derivation graph, no report); ``execute`` runs many, in this process, in a
process pool or on Dask; ``table`` turns the rows into ``summary.csv``, ``pareto.csv`` and the
summary page; ``run`` puts these together for a checked specification. The command
(``engine/cli/sweep.py``) owns the output folder, resuming and the progress bar; the server
(``engine/serve/sweeps.py``) runs the same as jobs.
"""
