"""`bakeoff profile`: a case re-run under perf record, its folded stacks and flame graphs."""
