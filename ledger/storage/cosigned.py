"""The latest cosigned checkpoint the log gathered (`ledger checkpoint --witness ...`), kept in the ledger
itself (a row of ledger_meta), so `serve`, `publish` and a read replica all give the same one at /checkpoint.

Only a larger tree replaces it: a checkpoint of the same or a smaller size, asked for again, leaves the one
held in place (the first cosigned checkpoint of a size is the one the witnesses saw first).
"""

from __future__ import annotations

from ledger.storage.store import Store

KEY = "cosigned_checkpoint"


def _size(note: str) -> int:
    return int(note.split("\n", 2)[1])  # a checkpoint's second line (the caller verified the note)


def keep_cosigned(store: Store, note: str) -> bool:
    """Keep the verified cosigned checkpoint `note`, unless the ledger holds one of a tree as large; whether
    it was kept.
    Raises: InputError on an exported log, StoreError from the store."""
    with store.writing() as writer:
        cursor = writer.cursor
        row = cursor.execute("SELECT value FROM ledger_meta WHERE key = ?", (KEY,)).fetchone()
        if row is not None and _size(row[0]) >= _size(note):
            return False
        if row is None:
            cursor.execute("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", (KEY, note))
        else:
            cursor.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", (note, KEY))
        return True


def latest_cosigned(store: Store) -> str | None:
    """The cosigned checkpoint the ledger holds, or None.
    Raises: StoreError from the store."""
    with store.reading() as cursor:
        row = cursor.execute("SELECT value FROM ledger_meta WHERE key = ?", (KEY,)).fetchone()
    return None if row is None else row[0]
