"""ledger: an event-sourced, hash-chained system of record behind Paper Citation Records."""

__version__ = "0.1.0"
