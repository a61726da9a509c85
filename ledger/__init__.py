"""ledger: an event-sourced, hash-chained system of record behind Paper Citation Records.

The public Python API is the names in `__all__`: open or create a ledger (a `Ledger` handle), import files,
replay a record as of a date, verify a record, the history of a paper, an evidence bundle, their result types,
the canonical encoder, and the error families. Every module of the project imports this one first, so it must
stay cheap: a public name is imported when first used (PEP 562), and importing `ledger` alone never loads the
store, a driver or typer.
"""

TYPE_CHECKING = False  # True to type checkers, as typing.TYPE_CHECKING is, without importing typing

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
    "Ledger": "ledger.api:Ledger",
    "ImportResult": "ledger.api:ImportResult",
    "Head": "ledger.api:Head",
    "HistoryRow": "ledger.api:HistoryRow",
    "EvidenceBundle": "ledger.api:EvidenceBundle",
    "canonical": "ledger.core.canonical:canonical",
    "LedgerError": "ledger.core.errors:LedgerError",
    "InputError": "ledger.core.errors:InputError",
    "IntegrityError": "ledger.core.errors:IntegrityError",
    "NotFoundError": "ledger.core.errors:NotFoundError",
    "StoreError": "ledger.core.errors:StoreError",
}

__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:  # what a type checker sees of the names above, each re-exported (tests/test_package.py)
    from ledger.api import EvidenceBundle as EvidenceBundle
    from ledger.api import Head as Head
    from ledger.api import HistoryRow as HistoryRow
    from ledger.api import ImportResult as ImportResult
    from ledger.api import Ledger as Ledger
    from ledger.api import create_ledger as create_ledger
    from ledger.api import evidence_bundle as evidence_bundle
    from ledger.api import history as history
    from ledger.api import import_files as import_files
    from ledger.api import open_ledger as open_ledger
    from ledger.api import replay as replay
    from ledger.api import verify_record as verify_record
    from ledger.core.canonical import canonical as canonical
    from ledger.core.errors import InputError as InputError
    from ledger.core.errors import IntegrityError as IntegrityError
    from ledger.core.errors import LedgerError as LedgerError
    from ledger.core.errors import NotFoundError as NotFoundError
    from ledger.core.errors import StoreError as StoreError
else:  # hidden from type checkers, so `ledger.Store` is an error to them as it is at run time

    def __getattr__(name: str) -> object:
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
