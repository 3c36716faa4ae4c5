"""Explaining a run: results and their derivation graph, why-not, what-if, diffs, decision records."""
