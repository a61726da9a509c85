"""`ledger publish`: every path of the site written as static files under OUT/, the bytes `ledger serve`
gives for the same paths at the same as-of time, so that any static host or CDN can serve them. What is
written is the route table's (`web.routes`): each row's forms, once or per asset, paper, day with a record of
its own, or tile, and the checkpoint with a key.

An HTML page is `<path>/index.html`, which every static host serves for `<path>/` (and most for `<path>`);
everything else keeps its path. A file whose bytes are already there is left alone, so a re-run after more
appends rewrites only what changed (new tiles, the right edge, records whose bytes changed); a partial tile
of an earlier size stays, as C2SP asks of a log that signed a checkpoint of that size. Every id is checked
to be a well-formed arXiv id before anything is written, and every file is checked to resolve inside OUT/
(a symlink there cannot lead out either). Files are replaced atomically (write, then rename).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ledger.core.errors import InputError
from ledger.core.times import When, when
from ledger.log.signed_notes import Signer
from ledger.storage.store import Store
from ledger.services.tilestore import all_tiles

from ledger.model.arxiv import paper_id
from ledger.web.routes import ONCE, PER_ASSET, PER_DAY, PER_PAPER, PER_TILE, SIGNED, Question, Route, published
from ledger.web.site import ASSETS, Site


@dataclass
class Published:
    as_of: str
    papers: int
    written: int
    unchanged: int
    tree_size: int
    out: str

    def as_json(self) -> dict:
        return {"as_of": self.as_of, "out": self.out, "papers": self.papers, "tree_size": self.tree_size,
                "unchanged": self.unchanged, "written": self.written}


class Folder:
    """OUT/, written file by file, only inside it, only where the bytes differ."""

    def __init__(self, out: Path):
        self.out = out
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{out}: cannot create the output folder: {exc.strerror}") from None
        if not out.is_dir():
            raise InputError(f"{out}: not a folder")
        self.root = os.path.realpath(out)
        self.written = self.unchanged = 0
        self._checked: set[str] = set()  # folders known to resolve inside OUT/

    def _inside(self, relative: str) -> Path:
        parts = relative.split("/")
        if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
            raise InputError(f"{relative!r}: not a path inside {self.out}")
        target = Path(self.root, *parts)
        folder = str(target.parent)
        if folder not in self._checked:  # each folder once: resolving every file's path cost a tenth of the run
            resolved = os.path.realpath(folder)
            if os.path.commonpath([self.root, resolved]) != self.root:
                raise InputError(f"{relative!r}: resolves to {resolved}, outside {self.out}; nothing written there")
            if os.path.isdir(folder):  # checked as it is now; created by us from here on
                self._checked.add(folder)
        if os.path.islink(target):
            raise InputError(f"{relative!r}: a symbolic link in {self.out}; refusing to write through it")
        return target

    def put(self, relative: str, data: bytes) -> None:
        target = self._inside(relative)
        try:
            if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
                self.unchanged += 1
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            self._inside(relative)  # again, now that the folders exist: none of them may lead out
            temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, target)
        except OSError as exc:
            raise InputError(f"{self.out}/{relative}: cannot write: {exc.strerror}") from None
        self.written += 1


def publish(store: Store, out: Path, as_of: When, signer: Signer | None = None,
            progress: Callable[[int, int], None] | None = None) -> Published:
    """Write the site as of `as_of` under `out`; return how many files were written and left alone.
    `progress(done, total)` is told after each paper."""
    size = store.head()[0]
    papers = list(store.papers(as_of.key))
    for paper in papers:  # every id, before any file: one that is not an arXiv id writes nothing at all
        try:
            paper_id(paper)
        except InputError as exc:
            raise InputError(f"publish: the ledger holds a paper whose id cannot be a path: {exc}; nothing written") from None
    folder = Folder(out)
    site = Site(store, signer)

    def write(route: Route, question: Question) -> None:
        for form, render in route.forms():
            folder.put(route.file_of(form, question), render(site, question).content)

    for route in published(PER_ASSET):
        for name in ASSETS:
            write(route, Question(name=name))
    for route in published(ONCE):
        write(route, Question())
    for count, paper in enumerate(papers, start=1):
        shared = Question(paper, as_of)  # one read of the paper's facts and one record for all its files
        for route in published(PER_PAPER):
            write(route, shared)
        for day, own in site.change_days(paper, shared.facts_from(site), as_of):
            if own:
                on = Question(paper, when("as_of", day), day=day, facts=shared.facts)
                for route in published(PER_DAY):
                    write(route, on)
        if progress:
            progress(count, len(papers))
    for route in published(PER_TILE):
        for tile, data in all_tiles(store, size):  # tiles before the checkpoint that needs them
            folder.put(route.file_of("file", Question(tile=tile)), data)
    if signer is not None:
        for route in published(SIGNED):
            write(route, Question(size=size))
    return Published(as_of.text, len(papers), folder.written, folder.unchanged, size, str(out))
