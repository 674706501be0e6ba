"""Measuring: rounds of trials, allocation, one trial's process and protocol, interrupts, clean-up."""
