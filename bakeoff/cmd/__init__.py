"""`bakeoff cmd`: commands measured as a benchmark built at run time, and its exports."""
