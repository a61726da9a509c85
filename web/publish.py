"""`ledger publish`: every path of the site written as static files under OUT/, the bytes `ledger serve`
gives for the same paths at the same as-of time, so that any static host or CDN can serve them.

    /                                      index.html
    /evidence                              evidence/index.html
    /assets/<name>                         assets/<name>
    /checkpoint                            checkpoint                      (with a key)
    /tile/<L>/<N>[.p/<W>]                  tile/<L>/<N>[.p/<W>]
    /tile/entries/<N>[.p/<W>]              tile/entries/<N>[.p/<W>]
    /paper/<id>                            paper/<id>/index.html
    /paper/<id>/citation-record            paper/<id>/citation-record/index.html
    /paper/<id>/citation-record.json       paper/<id>/citation-record.json
    /paper/<id>/integrity                  paper/<id>/integrity/index.html
    /paper/<id>/integrity.json             paper/<id>/integrity.json
    /paper/<id>/history.json               paper/<id>/history.json
    /paper/<id>/as-of/<day>/citation-record[.json]   the same, for each day something changed

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

from ledger.web import urls
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


def file_for(path: str, html: bool) -> str:
    """The file (relative to OUT/) that serves a URL path."""
    if html:
        return "index.html" if path == "/" else f"{path.strip('/')}/index.html"
    return path.strip("/")


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
            progress: Callable[[str], None] | None = None) -> Published:
    """Write the site as of `as_of` under `out`; return how many files were written and left alone."""
    size = store.head()[0]
    papers = list(store.papers(as_of.key))
    for paper in papers:  # every id, before any file: one that is not an arXiv id writes nothing at all
        try:
            urls.paper_id(paper)
        except InputError as exc:
            raise InputError(f"publish: the ledger holds a paper whose id cannot be a path: {exc}; nothing written") from None
    folder = Folder(out)
    site = Site(store, signer)
    for name in ASSETS:
        folder.put(f"assets/{name}", site.asset(name).content)
    folder.put(file_for("/", True), site.index_html().content)
    folder.put(file_for("/evidence", True), site.evidence_html().content)
    for count, paper in enumerate(papers, start=1):
        facts = site.facts(paper, None)
        record = site.record(paper, as_of, None, facts)
        base = urls.paper_url(paper)
        folder.put(file_for(f"{base}/citation-record.json", False), site.record_json(paper, as_of, None, record).content)
        folder.put(file_for(f"{base}/citation-record", True), site.record_html(paper, as_of, None, record).content)
        found = site.integrity(paper, as_of, None, record)
        folder.put(file_for(f"{base}/integrity.json", False), site.integrity_json(paper, as_of, None, found).content)
        folder.put(file_for(f"{base}/integrity", True), site.integrity_html(paper, as_of, None, found).content)
        folder.put(file_for(base, True), site.paper_html(paper, as_of, None, facts).content)
        folder.put(file_for(f"{base}/history.json", False), site.history_json(paper, as_of, None, facts).content)
        for day, own in site.change_days(paper, facts, as_of):
            if own:
                at = when("as_of", day)
                day_record = site.record(paper, at, None, facts)
                folder.put(file_for(f"{base}/as-of/{day}/citation-record.json", False),
                           site.record_json(paper, at, None, day_record).content)
                folder.put(file_for(f"{base}/as-of/{day}/citation-record", True),
                           site.record_html(paper, at, None, day_record, day).content)
        if progress:
            progress(f"{count}/{len(papers)} {paper}")
    for tile, data in all_tiles(store, size):  # tiles before the checkpoint that needs them
        folder.put(tile.path(), data)
    if signer is not None:
        folder.put("checkpoint", site.checkpoint(size).content)
    return Published(as_of.text, len(papers), folder.written, folder.unchanged, size, str(out))
