"""The error families of the ledger.

Every failure a user can cause or observe is one of these; the command line maps them to exit codes in
one place (`cli.main`). Messages say what was expected and what was found, and name the file, field,
observation or sequence number. This module must never import anything heavier than the standard library.
"""


class LedgerError(Exception):
    """Base of every error the ledger raises on purpose. `problems` lists every finding, one line each,
    when there are several (the message then sums them up)."""

    exit_code = 3

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or [message]


class InputError(LedgerError):
    """Bad input: a malformed file, a wrong schema, a bad date, a refused fact. Exit 2."""

    exit_code = 2


class IntegrityError(LedgerError):
    """A digest or chain hash does not re-compute, or a record disagrees with history. Exit 1."""

    exit_code = 1


class NotFoundError(LedgerError):
    """Nothing exists for the question asked (no record of a paper as of a date). Exit 1."""

    exit_code = 1


class StoreError(LedgerError):
    """The store cannot be used: unreachable, locked past its timeout, of another schema version. Exit 3."""

    exit_code = 3
