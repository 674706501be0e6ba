"""A history of runs: every run recorded, its series, and where their levels changed."""
