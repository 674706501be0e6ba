"""Records to statistics: within a run, across runs, across hosts."""
