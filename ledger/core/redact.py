"""What may be shown of a user's input: the one function every error, warning or log line passes a quoted
input (`quoted`), a database URL (`redact_url`) or a whole message (`redact`) through.

Threat: a signing key handed to the wrong option (`--policy ledger.key`), pasted as text, or a database URL
with its password, echoed into a terminal, a CI log or a bug report. So key material (signed-note and
cosignature/v1 keys, private or public, whole or in part) and passwords are replaced before anything is
printed, whatever the caller quotes. This module must never print, and never import anything heavier than
the standard library: the offline verifier and every layer above use it.
"""

from __future__ import annotations

import base64
import binascii
import re

HIDDEN_KEY = "<key text, not shown>"
HIDDEN_PASSWORD = "***"
QUOTED_LIMIT = 80  # characters of an input an error quotes: enough to recognise it, never a whole file

# A signing key's text, from its marker to the end of the token: whatever follows is the key (but not the
# placeholders messages name the form with: "PRIVATE+KEY+...", "PRIVATE+KEY+<name>+<id>+<key>").
_PRIVATE = re.compile(r"PRIVATE\+KEY\+(?!\.\.\.|<name>)[^\s+]*(?:\+[A-Za-z0-9+/=]*)?", re.IGNORECASE)
# A verifier (or cosigner verifier) key, `<name>+<8 hex>+<base64>`; a signing key without its marker too.
_PUBLIC = re.compile(r"[^\s+'\"(]*\+[0-9a-fA-F]{8}\+[A-Za-z0-9+/=]+")
# The base64 of a bare key, alone: 33 bytes whose first names an Ed25519 (0x01) or cosignature/v1 (0x04) key.
_BARE = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{43}[A-Za-z0-9+/=](?![A-Za-z0-9+/=])")
_KEY_TYPES = (0x01, 0x04)
# A URL (its scheme, then everything up to white space or a quote), and a `password=` setting in a DSN.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]*")
_PASSWORD = re.compile(r"(?i)\b((?:ssl)?pass(?:word|wd)?\s*=\s*)('[^']*'|[^\s&;]*)")
_PASSWORD_SHOWN = rf"\g<1>{HIDDEN_PASSWORD}"


def _bare_key(match: re.Match[str]) -> str:
    try:
        raw = base64.b64decode(match.group(0), validate=True)
    except (binascii.Error, ValueError):
        return str(match.group(0))
    return HIDDEN_KEY if len(raw) == 33 and raw[0] in _KEY_TYPES else str(match.group(0))


def redact_url(url: str) -> str:
    """A database (or any) URL as it may be shown: its password, in the user part or as a `password=` query
    setting, replaced by `***`; what is not a URL is `redact`ed as text.
    Raises: nothing."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return redact(url)
    at = rest.rfind("@")  # the last: a password may hold an unescaped '@'; hiding too much is safe
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        rest = f"{user}{':' + HIDDEN_PASSWORD if colon else ''}@{rest[at + 1:]}"
    return _without_keys(f"{scheme}://{_PASSWORD.sub(_PASSWORD_SHOWN, rest)}")


def redact(text: str) -> str:
    """`text` with every key's material and every password in it replaced: what a message may print.
    Raises: nothing."""
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)) if "@" in match.group(0) or "pass" in
                        match.group(0).lower() else match.group(0), text)
    return _without_keys(_PASSWORD.sub(_PASSWORD_SHOWN, text))


def _without_keys(text: str) -> str:
    if "+" in text:
        text = _PUBLIC.sub(HIDDEN_KEY, _PRIVATE.sub(HIDDEN_KEY, text))
    return _BARE.sub(_bare_key, text)


def quoted(text: object, limit: int = QUOTED_LIMIT) -> str:
    """A user's input as an error quotes it: `redact`ed, then in Python's quotes with control characters
    escaped (so it stays one line), shortened to `limit` characters with "..." when longer. A value that is not
    text (a JSON number, list or null where a string was expected) is quoted as Python writes it.
    Raises: nothing."""
    if not isinstance(text, str):
        shown = redact(repr(text))
        return shown if len(shown) <= limit else shown[:limit] + "..."
    shown = redact(text)
    if len(shown) > limit:
        return repr(shown[:limit]) + "..."
    return repr(shown)
