"""The latest cosigned checkpoint the log gathered (`ledger checkpoint --witness ...`), kept in the ledger
itself (a row of ledger_meta), so `serve`, `publish` and a read replica all give the same one at /checkpoint;
and, as another row kept the same way, the paper index note cosigned by auditing witnesses, which bundles of
its tree carry.

A larger tree replaces it. The same tree cosigned again is merged into it: the signature lines of both, one per
key, the held note's first (so what was served stays served, and /checkpoint gives the tree with the most
cosignatures). A smaller tree, or another body at the same size, leaves the one held in place. It never
verifies a note: the caller gives verified ones.
"""

from __future__ import annotations

import base64
import binascii

from ledger.log.signed_notes import split_note
from ledger.storage.store import Store

KEY = "cosigned_checkpoint"
INDEX_KEY = "cosigned_paper_index"  # the paper index note cosigned by auditing witnesses, kept the same way


def _size(note: str) -> int:
    return int(note.split("\n", 2)[1])  # a checkpoint's second line (the caller verified the note)


def _signer(line: str) -> tuple[str, bytes] | str:
    """Who made a signature line: its key name and id (a signed-note key hash), or the line itself."""
    name, _, blob = line.partition(" ")[2].partition(" ")
    try:
        return name, base64.b64decode(blob, validate=True)[:4]
    except (binascii.Error, ValueError):
        return line


def _merged(held: str, note: str) -> str | None:
    """The note to keep when `held` is kept and `note` is given, or None to keep `held`."""
    if _size(note) != _size(held):
        return note if _size(note) > _size(held) else None
    text, lines = split_note(held)
    given_text, given = split_note(note)
    if given_text != text:
        return None  # the same size with another body: never mixed into one note
    signers = {_signer(line) for line in lines}
    for line in given:
        if _signer(line) not in signers:
            lines.append(line)
            signers.add(_signer(line))
    merged = text + "\n" + "\n".join(lines) + "\n"
    return merged if merged != held else None


def keep_cosigned(store: Store, note: str, key: str = KEY) -> bool:
    """Keep the verified cosigned checkpoint `note` if its tree is larger than the one held, or merge its
    signature lines into the held note of the same tree; whether the note kept changed. `key`: INDEX_KEY for
    the paper index note cosigned by auditing witnesses.
    Raises: InputError on an exported log, StoreError from the store."""
    with store.writing() as writer:
        cursor = writer.cursor
        row = cursor.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
        kept = note if row is None else _merged(row[0], note)
        if kept is None:
            return False
        if row is None:
            cursor.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (key, kept))
        else:
            cursor.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", (kept, key))
        return True


def latest_cosigned(store: Store, key: str = KEY) -> str | None:
    """The cosigned checkpoint the ledger holds (`key` INDEX_KEY: the cosigned paper index note), or None.
    Raises: StoreError from the store."""
    with store.reading() as cursor:
        row = cursor.execute("SELECT value FROM ledger_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]
