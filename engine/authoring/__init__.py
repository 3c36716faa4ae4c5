"""Tools for rule authors: lint (validate), rule test cases, scaffolding, generated docs."""
