"""Running: the session runner that drives a backend stratum by stratum, and the combine policies."""
