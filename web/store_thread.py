"""The one thread that owns the store: a Store is not thread-safe, and an exported `.jsonl` log lives in an
in-memory SQLite connection bound to its thread, so one thread per process owns the store and runs every
request's ledger work, in order (`StoreThread`); serve several processes (`ledger serve --workers N`) to use
several cores. It never parses a request nor builds a response.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ledger.core.errors import LedgerError, StoreError
from ledger.core.redact import redact
from ledger.importing.logfile import open_ledger
from ledger.log.signed_notes import Signer
from ledger.storage.store import Store
from ledger.web.answers import Answers
from ledger.web.site import Site

log = logging.getLogger("ledger.web")


class StoreThread:
    """The store and its pages, owned by one thread: every call runs there, in order. Closing it (the app's
    shutdown) closes a store it opened and ends the thread; a later call opens both again."""

    def __init__(self, source: Store | str, signer: Signer | None = None):
        self.source, self.signer = source, signer
        self.site: Site | None = None
        self.answers = Answers()  # pages already rendered, kept while what they depend on is unchanged
        self.commits = None  # the database's commit counter (`Backend.watch`), read in the event loop; or None
        self.thread: ThreadPoolExecutor | None = None
        self.errors = 0  # calls the database failed (a StoreError): `ledger_database_errors_total`
        try:  # a path that is not a ledger fails now; a database that is down answers 503 until it is back
            self._executor().submit(self._open).result()
        except StoreError as exc:
            log.warning("ledger: %s (serving 503 until it can be opened)", redact(str(exc)))

    def _executor(self) -> ThreadPoolExecutor:
        if self.thread is None:
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-store")
        return self.thread

    def _open(self) -> Site:
        if self.site is None:
            store = self.source if isinstance(self.source, Store) else open_ledger(self.source)
            self.site = Site(store, self.signer)
            self.answers.unstamp()  # stamps of a counter closed before, if any, mean nothing to this one
            self.commits = store.backend.watch(store.url)
        return self.site

    def _run(self, work: Callable, args: tuple):
        try:
            try:
                site = self._open()
            except StoreError:
                raise
            except LedgerError as exc:  # it opened once; now it does not: the server's problem, not the client's
                raise StoreError(f"the ledger cannot be opened: {exc}") from None
            return work(site, *args)
        except StoreError as exc:
            self.errors += getattr(exc, "database", True)  # not a readiness probe's own refusal (web.health)
            raise

    async def __call__(self, work: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor(), self._run, work, args)

    def stamp(self) -> int | None:
        """The commit counter, read now in the caller's thread (the event loop); None without one."""
        commits = self.commits
        return commits() if commits is not None else None

    def close(self) -> None:
        if self.thread is None:
            return

        def shut() -> None:
            commits, self.commits = self.commits, None
            if commits is not None:
                commits.close()
            if self.site is not None and not isinstance(self.source, Store):
                self.site.store.close()
                self.site = None

        thread, self.thread = self.thread, None
        thread.submit(shut).result()
        thread.shutdown()
