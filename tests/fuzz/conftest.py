"""The fuzz tier: every parser of outside bytes fed mutated and raw inputs (see tests/fuzz/strategies.py)."""
