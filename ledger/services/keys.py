"""Key files: a signing or verifier key read from the file a user names, its refusals naming that file. The
one reader of key files for the command line and the Python API.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Callable
from typing import TypeVar

from ledger.core.errors import InputError
from ledger.core.inputs import decode_input, read_input
from ledger.core.limits import KEY, POLICY, Limit
from ledger.log.cosignature import Cosigner, CosignerKey, Policy, parse_cosigner, parse_cosigner_key, parse_policy
from ledger.log.signed_notes import Signer, Verifier, parse_signer, parse_verifier

Key = TypeVar("Key", Signer, Verifier, Cosigner, CosignerKey, Policy)


class ExposedKeyWarning(UserWarning):
    """A signing key file that others than its owner may read (as ssh warns of one); `cli.main` prints it in
    one line on stderr."""


def _warn_if_exposed(name: str) -> None:
    # Checked on the file read (a symlink's target): group or others may read or write it.
    try:
        info = os.stat(name)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        warnings.warn(f"{name} is readable by others (mode {stat.S_IMODE(info.st_mode):04o}); chmod 600 it",
                      ExposedKeyWarning, stacklevel=3)


def _looks_like_key(name: str) -> bool:
    # What is not a file but reads as key text is never echoed: an error naming it would print the key.
    return not os.path.exists(name) and name.count("+") >= 2


def _load_key(name: str, parse: Callable[[str], Key], expected: str, limit: Limit = KEY,
              private: bool = False) -> Key:
    text = decode_input(name, read_input(name, limit), expected)  # names the file itself when it cannot be read
    try:
        key = parse(text)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    if private:
        _warn_if_exposed(name)
    return key


def load_signer(name: str) -> Signer:
    """The signing key in the file `name` (`ledger keygen` writes one); an ExposedKeyWarning when others may
    read the file.
    Raises: InputError naming the file (a key's text is never repeated in it)."""
    if _looks_like_key(name):
        raise InputError("the signing key was given as text: give the file that holds it (key text on a command "
                         "line stays in the shell's history)")
    return _load_key(name, parse_signer, "a signing key", private=True)


def load_verifier(name: str) -> Verifier:
    """The verifier key in the file `name`, or `name` itself when it is no file but a verifier key's text
    (`<name>+<id>+<key>`, as `ledger keygen` prints it).
    Raises: InputError naming the file (a key's text is never repeated in it)."""
    return _load_public(name, parse_verifier, "verifier key")


def _load_public(name: str, parse: Callable[[str], Key], what: str) -> Key:
    # A public key may be given as its text; a file is read otherwise.
    if _looks_like_key(name):
        try:
            return parse(name)
        except InputError as exc:
            raise InputError(f"{what} given as text: {exc}") from None
    return _load_key(name, parse, f"a {what}")


def load_cosigner(name: str) -> Cosigner:
    """A witness's cosigner key in the file `name` (`ledger keygen --cosigner` writes one); an
    ExposedKeyWarning when others may read the file.
    Raises: InputError naming the file (a key's text is never repeated in it)."""
    if _looks_like_key(name):
        raise InputError("the cosigner key was given as text: give the file that holds it")
    return _load_key(name, parse_cosigner, "a cosigner key", private=True)


def load_cosigner_key(name: str) -> CosignerKey:
    """A witness's public key (cosignature/v1 vkey) in the file `name`, or `name` itself as vkey text.
    Raises: InputError naming the file, or saying the text given is no witness key."""
    return _load_public(name, parse_cosigner_key, "witness key")


def load_policy(name: str) -> Policy:
    """A C2SP tlog-policy file.
    Raises: InputError naming the file and the line that is wrong."""
    return _load_key(name, parse_policy, "a witness policy", POLICY)
