"""The application layer: what a command asks (RunRequest) and the run it makes of it.

The CLI (bakeoff/cli/) only turns words into a RunRequest and hands it here; `run`, `cmd`,
`profile` and `fleet run` share one request type and one run environment (runs.py).
"""
