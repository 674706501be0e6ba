"""The room API: what a room's spec and programs import, and nothing else of the harness."""
