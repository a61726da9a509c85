"""`ledger publish`: every path of the site written as static files under OUT/, the bytes `ledger serve`
gives for the same paths at the same as-of time, so that any static host or CDN can serve them. What is
written is the route table's (`web.routes`): each row's forms, once or per asset, paper, day with a record of
its own, or tile, and the checkpoint with a key.

An HTML page is `<path>/index.html`, which every static host serves for `<path>/` (and most for `<path>`);
everything else keeps its path. A re-run costs what changed: the state saved last in OUT/ (`STATE`: the
as-of, key, renderer, tree size and chain hash, every file's size and time) tells which papers have events
since and which files were edited or deleted since; only those papers are rendered, only new tiles read
(with `trust`, the other papers' files are not looked at, so a run costs the same at any size). Another
as-of, key, ledger or version renders every paper. A file whose bytes are already there is left alone; a
partial tile of an earlier size stays, as C2SP asks of a log that signed a checkpoint of that size. Every id
is checked to be a well-formed arXiv id (a paper whose id is not, appended before import checked ids, is
skipped and named in `Published.skipped`), and every file is written through
`ledger.core.files`: only inside OUT/, never through a symbolic link, replaced atomically (write, then rename).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from ledger import __version__
from ledger.core import files as written_files
from ledger.core.errors import InputError
from ledger.core.times import When, when
from ledger.log.signed_notes import Signer
from ledger.log.tiles import Tile, parse_tile_path, partial_tiles
from ledger.model.arxiv import is_paper_id, month_id, month_of
from ledger.model.shards import EVERY, Shard
from ledger.services.tilestore import all_tiles
from ledger.storage.publish_state import PublishState
from ledger.storage.store import Store
from ledger.web.routes import (
    ONCE,
    PER_ASSET,
    PER_DAY,
    PER_MONTH,
    PER_PAPER,
    PER_TILE,
    SIGNED,
    Question,
    Route,
    published,
)
from ledger.web.site import ASSETS, Site

# What the last publish wrote, so that the next rebuilds only what changed (`ledger.storage.publish_state`). Not a page:
# no route serves it.
STATE = ".ledger-publish"
STATE_FILE = f"{STATE}/state.sqlite"


@dataclass
class Published:
    as_of: str
    papers: int
    written: int
    unchanged: int
    tree_size: int
    out: str
    rebuilt: int = 0  # papers rendered this time; the others' files were left as the last publish wrote them
    whole: str | None = None  # why every paper was rendered (no state, another as-of, key, ledger or renderer)
    skipped: tuple[str, ...] = ()  # papers whose id cannot be a path (appended before import checked ids)

    def as_json(self) -> dict:
        return {"as_of": self.as_of, "out": self.out, "papers": self.papers, "rebuilt": self.rebuilt,
                "tree_size": self.tree_size, "unchanged": self.unchanged, "whole": self.whole,
                "written": self.written}


class Folder:
    """OUT/, written file by file through the one file-writing helper (`ledger.core.files.Folder`: only inside
    OUT/, never through a symbolic link), only where the bytes differ."""

    def __init__(self, out: Path):
        self.out = out
        self.folder = written_files.Folder(out)
        self.root = os.path.realpath(out)
        self.written = 0
        # relative path -> [size, mtime_ns] of what this run wrote or found written: the site's own files, and
        # the current paper's (handed to the state a paper at a time, so memory stays flat)
        self.files: dict[str, list[int]] = {}
        self.paper_files: dict[str, list[int]] = {}

    def put(self, relative: str, data: bytes) -> None:
        written, stat = self.folder.put(relative, data, only_changed=True)
        self.written += written
        (self.paper_files if relative.startswith("paper/") else self.files)[relative] = [stat.st_size, stat.st_mtime_ns]

    def next_paper(self) -> None:
        """Forget the last paper's files and close its folders: what is held stays one paper's worth."""
        self.paper_files = {}
        self.folder.forget("paper/")

    def close(self) -> None:
        """Close OUT/ and the folders below it held open."""
        self.folder.close()

    def touched(self, recorded: dict[str, list[int]]) -> set[str]:
        """The files of `recorded` that are gone or whose size or modification time is not the one recorded:
        edited, replaced or deleted since (by hand, or by a run that stopped before saving its state)."""
        touched = set()
        for relative, kept in recorded.items():
            try:
                stat = os.lstat(f"{self.root}/{relative}")
            except (OSError, TypeError, ValueError):
                touched.add(relative)
                continue
            if kept != [stat.st_size, stat.st_mtime_ns]:  # also a state edited into something else
                touched.add(relative)
        return touched

    def state_file(self) -> Path:
        """Where the publish state is kept (`ledger.storage.publish_state`), its folder made, neither it, the state nor
        SQLite's journal beside it a symbolic link (`Folder.path_of`)."""
        return Path(self.folder.path_of(STATE_FILE))


def _renderer() -> str:
    """What the bytes of a page depend on besides the ledger: this installation's code, templates and assets
    (every file of the package, so a changed line of a renderer renders every paper again)."""
    digest = hashlib.sha256(__version__.encode())

    def walk(folder, prefix: str) -> None:
        for item in sorted(folder.iterdir(), key=lambda i: i.name):
            if item.is_dir() and item.name != "__pycache__":
                walk(item, f"{prefix}{item.name}/")
            elif item.is_file() and item.name.endswith((".py", ".html", ".js", ".css", ".svg")):
                digest.update(f"{prefix}{item.name}".encode() + b"\0" + item.read_bytes())

    for package in ("ledger", "ledger.projections", "ledger.web"):  # three folders (pyproject's package-dir)
        walk(files(package), f"{package}:")
    return digest.hexdigest()


def _whole(before: dict | None, settings: dict, store: Store, size: int) -> str | None:
    """Why every paper must be rendered again, or None when the last publish's files can be kept."""
    if before is None:
        return "no earlier publish in this folder"
    for name, why in (("as_of", "another --as-of"), ("verifier", "another key"), ("renderer", "another version"),
                      ("shard", "another --shard")):
        if before.get(name) != settings[name]:
            return why
    old = before.get("tree_size")
    if not isinstance(old, int) or not 0 <= old <= size:
        return "the state names a log larger than this ledger's"
    with store.reading() as cursor:
        chain = cursor.entry(old).chain_hash.hex() if old else None
    if old and chain != before.get("chain"):
        return "another ledger published into this folder"
    return None


def _usable(papers: Iterable[str], skipped: set[str]) -> list[str]:
    """The papers whose id can be a path (`arxiv.is_paper_id`), in their order; the others, appended before
    import checked ids, are added to `skipped`: passed over with a warning, not a refusal for good (the log is
    append-only)."""
    kept = []
    for paper in papers:
        kept.append(paper) if is_paper_id(paper) else skipped.add(paper)
    return kept


def publish(store: Store, out: Path, as_of: When, signer: Signer | None = None,
            progress: Callable[[int, int], None] | None = None, trust: bool = False, shard: Shard = EVERY) -> Published:
    """Write the site as of `as_of` under `out`; return how many files were written and left alone.
    Papers with no event since the last publish into `out` (its state: as-of, key, tree size, every file's
    size and time) keep their files, unless one was edited or deleted since. With `trust`, the files of those
    papers and the site's are not looked at (one lstat a file, the run's cost on a large site): only the
    papers with events since are read at all. `progress(done, total)` is told after each paper rendered or
    checked. With `shard` K/N, only the files of that shard's papers; the site's own files (assets, home and month
    pages, tiles, checkpoint) are shard 1's: the union of N folders is one unsharded publish (docs/scale.md)."""
    folder = Folder(out)
    try:
        state = PublishState(folder.state_file())
        try:
            return _publish(store, folder, state, as_of, signer, progress, trust, shard)
        finally:
            state.close()
    finally:
        folder.close()


def _publish(store: Store, folder: Folder, state: PublishState, as_of: When, signer: Signer | None,
             progress: Callable[[int, int], None] | None, trust: bool, shard: Shard = EVERY) -> Published:
    size, chain, _ = store.head()
    site = Site(store, signer)
    settings = {"as_of": as_of.key, "renderer": _renderer(), "verifier": str(signer.verifier) if signer else None,
                "shard": None if shard.whole else str(shard)}
    before = state.settings()
    whole = _whole(before, settings, store, size)
    since, touched, skipped = 0, set(), set()
    if whole is None:
        since = before["tree_size"]
        with store.reading() as cursor:
            changed = cursor.papers_since(since, size)
            # A paper's first record here: the cards of the papers its citations name now link to it.
            for paper in sorted(cursor.shown_papers(changed, as_of.key)):
                if state.files_of(paper) is None:
                    changed |= cursor.linked_papers(paper)
            if trust:  # the papers with events since that have a record as of then: nothing else is read
                papers = _usable(sorted(cursor.shown_papers(changed, as_of.key)), skipped)
        if not trust:
            touched = folder.touched(dict(state.site_files()))
            state.forget_site_files(touched)
    else:
        state.forget()
    if whole is not None or not trust:
        papers = _usable(sorted(store.papers(as_of.key)), skipped)  # Python's order: the state's rows are merged in it
    if whole is not None:
        changed = set(papers)
    # Shard 1 leads: it writes the site's own files, and redoes the list of a month with a paper changed, of any shard.
    lead, listed, papers = shard.k == 1, papers, list(shard.papers(papers))

    if signer is not None:  # the index at each paper's own size, smallest first: each catch-up is short
        for own in sorted({store.paper_version(paper)[1] for paper in papers if paper in changed} - {0}):
            store.keep_index(own)

    def write(route: Route, question: Question) -> None:
        for form, render in route.forms():
            folder.put(route.file_of(form, question), render(site, question).content)

    for route in published(PER_ASSET) if lead else ():
        for name in ASSETS:
            write(route, Question(name=name))
    for route in published(ONCE) if lead else ():
        write(route, Question(as_of=as_of))
    rendered, months = 0, _months(touched)  # and each rendered paper's month (every month, when whole)
    if lead and not shard.whole:
        months |= {month_of(paper) for paper in listed if paper in changed}
    kept = state.papers() if whole is None and not trust else iter(())
    last = next(kept, None)
    for count, paper in enumerate(papers, start=1):
        while last is not None and last[0] < paper:
            last = next(kept, None)
        files = last[1] if last is not None and last[0] == paper else None
        if paper in changed or files is None or folder.touched(files):
            rendered += 1
            months.add(month_of(paper))
            state.keep_paper(paper, _render(site, paper, as_of, write, folder))
        if progress:
            progress(count, len(papers))
    for route in published(PER_MONTH) if lead else ():  # the lists of the months with a paper rendered or a page touched
        for month in sorted(months):
            write(route, Question(month=month, as_of=as_of))
    redone = frozenset(filter(None, (_tile(t) for t in touched if t.startswith("tile/"))))
    for route in published(PER_TILE) if lead else ():
        for tile, data in all_tiles(store, size, since, redone):  # tiles before the checkpoint that needs them
            folder.put(route.file_of("file", Question(tile=tile)), data)
    if signer is not None and lead:
        held = site.cosigned()
        signed = held[1] if held is not None and held[1] <= size else size
        if signed < size:  # the witnessed checkpoint is older: its partial tiles too, for a client following it
            for route in published(PER_TILE):
                for tile, data in all_tiles(store, signed, signed, frozenset(partial_tiles(signed))):
                    folder.put(route.file_of("file", Question(tile=tile)), data)
        for route in published(SIGNED):
            write(route, Question(size=signed))
        if signed < size:  # the index note of the log's own size too: what an auditing witness asked for it fetches
            write(next(r for r in published(SIGNED) if r.name == "paper_index"), Question(size=size))
    state.keep_site_files(folder.files)
    count, paper_files = state.paper_totals()
    unchanged = paper_files + state.site_count(tile.path() for tile in partial_tiles(size)) - folder.written
    state.save({**settings, "tree_size": size, "chain": chain.hex()})
    return Published(as_of.text, count, folder.written, unchanged, size, str(folder.out), rendered, whole,
                     tuple(sorted(shard.papers(skipped))))


def _render(site: Site, paper: str, as_of: When, write: Callable[[Route, Question], None],
            folder: Folder) -> dict[str, list[int]]:
    """Every file of one paper, written where its bytes changed; its files as they are now."""
    folder.next_paper()
    shared = Question(paper, as_of)  # one read of the paper's facts and one record for all its files
    for route in published(PER_PAPER):
        write(route, shared)
    for day, own in site.change_days(paper, shared.facts_from(site), as_of):
        if own:
            on = Question(paper, when("as_of", day), day=day, facts=shared.facts)
            for route in published(PER_DAY):
                write(route, on)
    return folder.paper_files


def _months(touched: Iterable[str]) -> set[str]:
    """The months whose list of papers is among the `touched` files (papers/<month>/index.html)."""
    found = set()
    for relative in touched:
        if relative.startswith("papers/") and relative.endswith("/index.html"):
            try:
                found.add(month_id(relative[len("papers/"):-len("/index.html")]))
            except InputError:
                pass  # not a page this site writes: nothing to restore
    return found


def _tile(relative: str) -> Tile | None:
    """The tile a touched file of tile/ is (an entry bundle: its level-0 tile, which brings it); None for a
    path the state should not hold."""
    try:
        tile = parse_tile_path(relative)
    except InputError:
        return None
    return Tile(0, tile.index, tile.width) if tile.entries else tile
