"""This machine: its capabilities and facts, and the CPUs a run claims."""
