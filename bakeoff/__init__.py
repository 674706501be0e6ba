"""bakeoff: head-to-head benchmarks of Linux systems mechanisms, with honest statistics."""

__version__ = "0.1.0"
