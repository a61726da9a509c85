"""Key files: a signing or verifier key read from the file a user names, its refusals naming that file. The
one reader of key files for the command line and the Python API.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ledger.core.errors import InputError
from ledger.core.inputs import decode_input, read_input
from ledger.log.signed_notes import Signer, Verifier, parse_signer, parse_verifier

Key = TypeVar("Key", Signer, Verifier)


def _load_key(name: str, parse: Callable[[str], Key], expected: str) -> Key:
    text = decode_input(name, read_input(name), expected)  # names the file itself when it cannot be read
    try:
        return parse(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


def load_signer(name: str) -> Signer:
    """The signing key in the file `name` (`ledger keygen` writes one).
    Raises: InputError naming the file."""
    return _load_key(name, parse_signer, "a signing key")


def load_verifier(name: str) -> Verifier:
    """The verifier key in the file `name`.
    Raises: InputError naming the file."""
    return _load_key(name, parse_verifier, "a verifier key")
