"""Statistics on numbers alone: estimates and intervals, their measured coverage, run-to-run drift,
and which metric decides better on a busy machine (as measured)."""
