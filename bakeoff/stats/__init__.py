"""Statistics on numbers alone: estimates and intervals, their measured coverage, run-to-run drift."""
