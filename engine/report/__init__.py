"""Reports: the stable JSON document, the templates that lay it out, and the derivation graph drawn."""
