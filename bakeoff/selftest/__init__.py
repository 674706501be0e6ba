"""`bakeoff selftest`: A/A runs that measure coverage and false alarms."""
