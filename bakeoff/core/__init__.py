"""The foundation every layer may use: errors, units, lazy imports, other processes by PID."""
