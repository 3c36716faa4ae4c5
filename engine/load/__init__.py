"""Loading: YAML and JSON files into typed values (the rule IR, catalogs, attributes, workloads)."""
