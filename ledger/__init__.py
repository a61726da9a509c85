"""ledger: an event-sourced, hash-chained system of record behind Paper Citation Records.

The public Python API is the names in `__all__`: open or create a ledger, import files, replay a record as of
a date, verify a record, the history of a paper, an evidence bundle, the canonical encoder, and the error
families. Every module of the project imports this one first, so it must stay cheap: a public name is
imported when first used (PEP 562), and importing `ledger` alone never loads the store, a driver or typer.
"""

__version__ = "0.1.0"

# Each public name and where it lives ("module:attribute"), imported on first use.
_PUBLIC = {
    "open_ledger": "ledger.api:open_ledger",
    "create_ledger": "ledger.api:create_ledger",
    "import_files": "ledger.api:import_files",
    "replay": "ledger.api:replay",
    "verify_record": "ledger.api:verify_record",
    "history": "ledger.api:history",
    "evidence_bundle": "ledger.api:evidence_bundle",
    "canonical": "ledger.core.canonical:canonical",
    "LedgerError": "ledger.core.errors:LedgerError",
    "InputError": "ledger.core.errors:InputError",
    "IntegrityError": "ledger.core.errors:IntegrityError",
    "NotFoundError": "ledger.core.errors:NotFoundError",
    "StoreError": "ledger.core.errors:StoreError",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    """A public name, imported on first use. Raises AttributeError for any other name."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'ledger' has no attribute {name!r}")
    from importlib import import_module

    module, _, attribute = _PUBLIC[name].partition(":")
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
