"""The rule language: its IR, expressions, the parser of conditions, and their one meaning."""
