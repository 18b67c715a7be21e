"""Comparing two traces: `diff` and the value equality it uses."""
