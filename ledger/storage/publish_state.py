"""What the last `ledger publish` into a folder wrote, kept in that folder (`OUT/.ledger-publish/state.sqlite`)
so that the next run renders only what changed: its settings (as-of, key, renderer, tree size, chain hash),
the size and modification time of each of the site's own files, and each paper's files, a row per paper.

An SQLite file rather than a JSON document: a run that trusts the folder reads and writes only the rows of
the papers it renders, so its cost does not grow with the site; and a run's rows and settings are committed in
one transaction at its end, so one that stops before leaves the last run's state whole. A file that cannot be
read as such a state is no state: every paper is rendered again.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from ledger.core.errors import InputError

FORMAT = 3  # 2: state.json and papers.jsonl
SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (id INTEGER PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS site (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS papers (paper TEXT PRIMARY KEY, files BLOB NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID;
-- The papers' totals, kept by the rows' own changes: summing them read every row (36 MB at 10,000 papers).
CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), papers INTEGER NOT NULL, files INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS paper_added AFTER INSERT ON papers
    BEGIN UPDATE totals SET papers = papers + 1, files = files + NEW.count; END;
CREATE TRIGGER IF NOT EXISTS paper_changed AFTER UPDATE ON papers
    BEGIN UPDATE totals SET files = files - OLD.count + NEW.count; END;
CREATE TRIGGER IF NOT EXISTS paper_removed AFTER DELETE ON papers
    BEGIN UPDATE totals SET papers = papers - 1, files = files - OLD.count; END;
"""
Stats = dict[str, list[int]]  # relative path -> [size, mtime_ns]


class PublishState:
    """The state file of one OUT/, open for one run: read as the last run left it, written in one transaction
    that `save` commits."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._db = self._open()
        except sqlite3.DatabaseError:  # not a state (damaged, or something else): start from none
            self._remove()
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            # by name: `Folder.path_of` checked that neither it nor its -journal, -wal or -shm is a link
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.OperationalError as exc:
            raise InputError(f"{self.path}: cannot open the publish state: {exc}") from None
        db.executescript(SCHEMA)  # reads the file's header first: a file that is not SQLite fails here
        db.execute("BEGIN IMMEDIATE")  # one writer a folder: a second publish into it waits, then fails
        if db.execute("SELECT 1 FROM totals").fetchone() is None:  # a new file, or one kept before the totals
            db.execute("INSERT INTO totals SELECT 1, count(*), coalesce(sum(count), 0) FROM papers")
        return db

    def _remove(self) -> None:
        for suffix in ("", "-journal"):
            try:
                os.remove(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise InputError(f"{self.path}: cannot replace a damaged publish state: {exc.strerror}") from None

    def settings(self) -> dict | None:
        """The last run's settings, or None (no run saved, or not a state of this format)."""
        row = self._db.execute("SELECT body FROM settings").fetchone()
        try:
            found = orjson.loads(row[0]) if row else None
        except orjson.JSONDecodeError:
            return None
        return found if isinstance(found, dict) and found.get("format") == FORMAT else None

    def forget(self) -> None:
        """Nothing kept: every file is written and recorded again."""
        self._db.execute("DELETE FROM site")
        self._db.execute("DELETE FROM papers")

    # the site's own files -----------------------------------------------------------------------------
    def site_files(self) -> Iterator[tuple[str, list[int]]]:
        yield from ((path, [size, mtime]) for path, size, mtime in self._db.execute("SELECT * FROM site ORDER BY path"))

    def forget_site_files(self, paths: Iterable[str]) -> None:
        self._db.executemany("DELETE FROM site WHERE path = ?", ((p,) for p in paths))

    def keep_site_files(self, files: Stats) -> None:
        self._db.executemany("INSERT OR REPLACE INTO site VALUES (?, ?, ?)",
                             ((path, size, mtime) for path, (size, mtime) in files.items()))

    def site_count(self, current_partials: Iterable[str]) -> int:
        """How many of the site's files this publication has: all but partial tiles of earlier sizes (kept, as
        C2SP asks of a log that signed a checkpoint of that size, but no longer part of it)."""
        partials = sorted(current_partials)
        marks = ", ".join("?" * len(partials)) or "NULL"
        return self._db.execute(f"SELECT count(*) FROM site WHERE NOT (path LIKE 'tile/%' AND path LIKE '%.p/%') "
                                f"OR path IN ({marks})", partials).fetchone()[0]

    # papers ---------------------------------------------------------------------------------------------
    def papers(self, batch: int = 500) -> Iterator[tuple[str, Stats | None]]:
        """(paper, its files, or None where the row cannot be read) in order, a page of rows at a time (rows
        of papers already passed may be replaced meanwhile)."""
        after = ""
        while True:
            rows = self._db.execute("SELECT paper, files FROM papers WHERE paper > ? ORDER BY paper LIMIT ?",
                                    (after, batch)).fetchall()
            yield from ((paper, _files(files)) for paper, files in rows)
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def files_of(self, paper: str) -> Stats | None:
        row = self._db.execute("SELECT files FROM papers WHERE paper = ?", (paper,)).fetchone()
        return _files(row[0]) if row else None

    def keep_paper(self, paper: str, files: Stats) -> None:
        self._db.execute("INSERT INTO papers VALUES (?, ?, ?) ON CONFLICT (paper) DO UPDATE SET files = excluded.files, "
                         "count = excluded.count", (paper, orjson.dumps(files), len(files)))  # an update: its trigger

    def paper_totals(self) -> tuple[int, int]:
        """(papers, their files) as kept."""
        count, files = self._db.execute("SELECT papers, files FROM totals").fetchone()
        return count, files

    def save(self, settings: dict) -> None:
        """Commit this run's rows and `settings`: until then the state is the last run's.
        Raises: InputError when the state file cannot be written."""
        try:
            self._db.execute("INSERT OR REPLACE INTO settings VALUES (1, ?)",
                             (orjson.dumps({"format": FORMAT, **settings}).decode(),))
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise InputError(f"{self.path}: cannot save the publish state: {exc}") from None

    def close(self) -> None:
        self._db.close()  # without `save`: rolled back


def _files(data: bytes) -> Stats | None:
    try:
        files = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        return None
    return files if isinstance(files, dict) else None
