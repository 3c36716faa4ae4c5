"""Planning: rules resolved against attributes and catalogs, bound, and ordered in strata."""
