"""The log as C2SP tlog-tiles. A client written here from the C2SP texts (tlog-tiles, tlog-checkpoint,
signed-note), not from the project's code, knows only the verifier key: it fetches the checkpoint and
tiles, from `serve` and from `publish` output, and re-computes the signed root and inclusion proofs."""

import base64
import hashlib

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.generate import generate
from ledger.core.canonical import canonical
from ledger.core.errors import InputError
from ledger.log.tiles import (
    MAX_ENTRY,
    EntryTooLongError,
    Tile,
    bundle,
    format_index,
    in_tree,
    longest_entry,
    parse_tile_path,
    partial_tiles,
    read_bundle,
    tiles_of,
)
from ledger.model.events import make_event
from ledger.services.proofs import prove_inclusion
from tests.conftest import Cli, run_ledger
from tests.helpers import event_line, redigest, seed_record, write_record
from tests.ledger.log.test_merkle import rfc_verify_inclusion


# -- a tile client, from the C2SP texts -------------------------------------------------------------------
def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def tile_path(level: object, n: int, width: int) -> str:
    """`tile/<L>/<N>[.p/<W>]`: N in zero-padded three-digit path elements, all but the last prefixed `x`."""
    groups = [f"{n % 1000:03d}"]
    while n >= 1000:
        n //= 1000
        groups.insert(0, f"x{n % 1000:03d}")
    return f"tile/{level}/{'/'.join(groups)}" + ("" if width == 256 else f".p/{width}")


class TileClient:
    def __init__(self, fetch, verifier_key: str):
        self.fetch, self.tiles = fetch, {}
        name, key_id, key = verifier_key.strip().split("+", 2)
        raw = base64.b64decode(key)
        assert raw[0] == 0x01 and len(raw) == 33  # Ed25519
        assert sha256(name.encode() + b"\n" + raw)[:4].hex() == key_id
        self.name, self.key_id, self.public = name, bytes.fromhex(key_id), Ed25519PublicKey.from_public_bytes(raw[1:])

    def checkpoint(self, note: bytes | None = None) -> tuple[int, bytes]:
        """Verify the signed note (a line by our key over the text before the blank line), read size and root."""
        note = (note if note is not None else self.fetch("checkpoint")).decode()
        text, signatures = note.split("\n\n", 1)
        text += "\n"
        for line in signatures.rstrip("\n").split("\n"):
            dash, name, blob = line.split(" ")
            raw = base64.b64decode(blob)
            if dash == "\u2014" and name == self.name and raw[:4] == self.key_id:
                self.public.verify(raw[4:], text.encode())  # raises InvalidSignature
                break
        else:
            raise AssertionError("no signature by the verifier key")
        origin, size, root = text.rstrip("\n").split("\n")[:3]
        assert origin == self.name
        return int(size), base64.b64decode(root)

    def tile(self, level: int, n: int, size: int) -> bytes:
        """The tile a tree of `size` has at (level, n): full, or of width floor(size / 256**level) mod 256."""
        count = size // 256**level
        width = 256 if (n + 1) * 256 <= count else count - n * 256
        assert 0 < width <= 256
        path = tile_path(level, n, width)
        if path not in self.tiles:
            data = self.fetch(path)
            assert data is not None, f"{path} is missing"
            assert len(data) == 32 * width, path
            self.tiles[path] = data
        return self.tiles[path]

    def hash_at(self, height: int, index: int, size: int) -> bytes:
        """MTH of the 2**height leaves from index * 2**height: read from a tile at a multiple of 8, hashed
        up from the tile below otherwise."""
        if height % 8 == 0:
            data = self.tile(height // 8, index // 256, size)
            return data[32 * (index % 256):32 * (index % 256 + 1)]
        return sha256(b"\x01" + self.hash_at(height - 1, 2 * index, size) + self.hash_at(height - 1, 2 * index + 1, size))

    def mth(self, lo: int, hi: int, size: int) -> bytes:
        """RFC 9162 2.1.1 MTH(D[lo:hi]), from tiles only."""
        n = hi - lo
        if n & (n - 1) == 0 and lo % n == 0:
            return self.hash_at(n.bit_length() - 1, lo // n, size)
        k = 1 << ((n - 1).bit_length() - 1)
        return sha256(b"\x01" + self.mth(lo, lo + k, size) + self.mth(lo + k, hi, size))

    def path(self, m: int, lo: int, hi: int, size: int) -> list[bytes]:
        """RFC 9162 2.1.3.1 PATH(m, D[lo:hi])."""
        n = hi - lo
        if n == 1:
            return []
        k = 1 << ((n - 1).bit_length() - 1)
        if m < k:
            return self.path(m, lo, lo + k, size) + [self.mth(lo + k, hi, size)]
        return self.path(m - k, lo + k, hi, size) + [self.mth(lo, lo + k, size)]

    def entries(self, size: int) -> list[bytes]:
        """Every entry, from the bundles, each checked against its level-0 tile hash."""
        found = []
        for n in range((size + 255) // 256):
            width = min(256, size - n * 256)
            data = self.fetch(tile_path("entries", n, width))
            assert data is not None
            at, leaves = 0, []
            while at < len(data):
                length = int.from_bytes(data[at:at + 2], "big")
                leaves.append(data[at + 2:at + 2 + length])
                at += 2 + length
            assert at == len(data) and len(leaves) == width
            level0 = self.tile(0, n, size)
            assert [sha256(b"\x00" + leaf) for leaf in leaves] == [level0[32 * i:32 * i + 32] for i in range(width)]
            found += leaves
        return found


def check_log(client: TileClient, store, note: bytes | None = None) -> int:
    """Everything a client can check of the log of a signed size, from tiles alone."""
    size, root = client.checkpoint(note)
    assert client.mth(0, size, size) == root
    leaves = client.entries(size)
    # Independently of the higher tiles: the root from the leaves' own hashes.
    assert rfc_root([sha256(b"\x00" + leaf) for leaf in leaves]) == root
    exported = [e for e in store.entries()][:size]
    for leaf, e in zip(leaves, exported):
        line = orjson.loads(leaf)
        assert set(line) == {"effective_at", "kind", "payload", "recorded_at", "seq"} and line["seq"] == e.seq
        assert leaf == orjson.dumps(line, option=orjson.OPT_SORT_KEYS)
    for index in sorted({0, size // 2, size - 1}):
        proof = client.path(index, 0, size, size)
        assert rfc_verify_inclusion(index, size, sha256(b"\x00" + leaves[index]), proof, root)
        assert [p.hex() for p in proof] == prove_inclusion(store, index + 1, size)["path"]
    return size


def rfc_root(hashes: list[bytes]) -> bytes:
    if len(hashes) == 1:
        return hashes[0]
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    return sha256(b"\x01" + rfc_root(hashes[:k]) + rfc_root(hashes[k:]))


# -- the tiles of growing logs, served and published --------------------------------------------------------
@pytest.mark.slow
def test_a_client_rebuilds_the_signed_root_from_tiles_at_every_size(store, signer, key_file, tmp_path):
    from ledger.web.app import create_app

    events = generate(700, seed=5)
    served = TestClient(create_app(store, signer))
    out = tmp_path / "site"
    vkey = str(signer.verifier)

    def from_server(path: str):
        response = served.get("/" + path)
        assert response.status_code in (200, 404), response.text
        return response.content if response.status_code == 200 else None

    def from_files(path: str):
        file = out / path
        return file.read_bytes() if file.is_file() else None

    notes, appended = [], 0
    for size in (1, 2, 255, 256, 257, 511, 512, 600, 700):
        with store.writing() as writer:
            writer.append(events[appended:size])
        appended = size
        note = served.get("/checkpoint").content
        assert check_log(TileClient(from_server, vkey), store) == size
        published = Cli.of(store)("publish", "--as-of", "2100-01-01", str(out), "--key", str(key_file))
        assert published.exit_code == 0, published.stderr
        assert (out / "checkpoint").read_bytes() == note
        assert check_log(TileClient(from_files, vkey), store) == size
        notes.append(note)
    # Checkpoints of every earlier size still check: their partial tiles are served, and kept on disk.
    for note in notes:
        check_log(TileClient(from_server, vkey), store, note)
        check_log(TileClient(from_files, vkey), store, note)
    assert sorted(p.name for p in (out / "tile" / "0" / "001.p").iterdir()) == ["1", "255"]
    assert sorted(p.name for p in (out / "tile" / "0" / "002.p").iterdir()) == ["188", "88"]
    assert sorted(p.name for p in (out / "tile" / "1" / "000.p").iterdir()) == ["1", "2"]


def test_a_tampered_tile_is_caught_by_the_client(store, signer):
    from ledger.web.app import create_app

    with store.writing() as writer:
        writer.append(generate(300, seed=5))
    served = TestClient(create_app(store, signer))

    def tampered(path: str):
        data = served.get("/" + path).content
        return data[:40] + bytes([data[40] ^ 1]) + data[41:] if path == "tile/0/000" else data

    with pytest.raises(AssertionError):
        check_log(TileClient(tampered, str(signer.verifier)), store)


# -- tile paths, bundles and the entry limit -----------------------------------------------------------
def test_tile_paths_follow_the_spec_examples():
    assert format_index(1234067) == "x001/x234/067" and format_index(0) == "000" and format_index(1000) == "x001/000"
    assert parse_tile_path("tile/entries/x001/x234/067.p/5") == Tile(None, 1234067, 5)
    # C2SP: a tree of size 70,000 has 273 full level-0 tiles, one partial of width 112, one full level-1
    # tile, one partial level-1 tile of width 17 and one partial level-2 tile of width 1.
    tiles = [t for t in tiles_of(70_000) if not t.entries]
    assert sum(1 for t in tiles if t.level == 0 and t.full) == 273
    assert [t.path() for t in tiles if not t.full] == ["tile/0/273.p/112", "tile/1/001.p/17", "tile/2/000.p/1"]
    assert [t.path() for t in tiles_of(256)] == ["tile/0/000", "tile/1/000.p/1", "tile/entries/000"]
    assert list(tiles_of(0)) == []


@given(st.integers(0, 300_000), st.integers(0, 300_000))
def test_the_tiles_since_a_size_are_those_that_size_did_not_have(a, b):
    since, size = min(a, b), max(a, b)
    every = list(tiles_of(size))
    had = set(tiles_of(since))
    assert list(tiles_of(size, since)) == [t for t in every if t not in had]
    assert set(partial_tiles(size)) == {t for t in every if not t.full}
    assert all(in_tree(t, size) for t in every)
    assert not any(in_tree(t, size) for t in had - set(every))  # an earlier size's partial tiles


@given(st.one_of(st.none(), st.integers(0, 63)), st.integers(0, 2**64), st.integers(1, 256))
def test_every_tile_has_one_path_and_it_parses_back(level, index, width):
    tile = Tile(level, index, width)
    assert parse_tile_path(tile.path()) == tile
    assert tile_path("entries" if level is None else level, index, width) == tile.path()  # the client's own


@pytest.mark.parametrize("path", ["tile/0/1", "tile/0/0001", "tile/00/000", "tile/0/x000/001", "tile/0/000.p/256",
                                  "tile/0/000.p/0", "tile/0/000.p/007", "tile/64/000", "tile/-1/000", "tile/0/x001",
                                  "tile/0/001/002", "tile/0/000.p", "tile/0/000.p/5/6", "tile/data/000", "tile/0/٠٠٠",
                                  "tile/0/000/", "tile//000", "tiles/0/000", "tile/0/+00"])
def test_a_non_canonical_tile_path_is_refused(path):
    with pytest.raises(InputError, match="not a tile path"):
        parse_tile_path(path)


def test_bundles_round_trip_and_refuse_an_entry_past_65535_bytes():
    entries = [(1, b""), (2, b"x" * MAX_ENTRY), (3, b"{}")]
    data = bundle(entries)
    assert data[:2] == b"\x00\x00" and data[2:4] == b"\xff\xff" and read_bundle(data) == [e for _, e in entries]
    with pytest.raises(EntryTooLongError, match="seq 9: its log entry is 65,536 bytes"):
        bundle([(9, b"x" * (MAX_ENTRY + 1))])
    with pytest.raises(InputError, match="runs past the end"):
        read_bundle(data[:-1])


def _snapshot_line(title: str) -> bytes:
    return event_line("paper.snapshot", {"arxiv_id": "2601.00003", "snapshot_observed_at": "2026-01-01T00:00:00Z",
                                         "title": title})


def _padding() -> int:
    """The title length at which a snapshot's longest log entry is exactly 65,535 bytes."""
    payload = canonical({"arxiv_id": "2601.00003", "snapshot_observed_at": "2026-01-01T00:00:00Z", "title": ""})
    return MAX_ENTRY - longest_entry("paper.snapshot", "2026-01-01T00:00:00Z", payload)


def test_import_refuses_an_event_whose_entry_could_pass_65535_bytes(cli, tmp_path):
    assert cli("init").exit_code == 0
    too_long = tmp_path / "long.jsonl"
    too_long.write_bytes(_snapshot_line("a" * (_padding() + 1)))
    refused = cli("import", str(too_long))
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == (f"ledger: {too_long}: line 1: paper.snapshot event of 65,536 bytes as a log entry: the "
                              "log is published as C2SP tiles, whose entry bundles carry at most 65,535 bytes per entry\n")
    assert cli("head").stdout.startswith("0 ")
    record = seed_record()
    record["inbound"][3]["citation"]["citing_paper"]["title"] = "b" * 70_000
    big = write_record(tmp_path / "big.json", redigest(record))
    refused = cli("import", big)
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"ledger: {big}: {record['inbound'][3]['observation_id']}: citation.observed event of ")
    fits = tmp_path / "fits.jsonl"
    fits.write_bytes(_snapshot_line("a" * _padding()))
    assert cli("import", str(fits)).exit_code == 0


def test_an_entry_at_the_limit_is_served_in_its_bundle(store, tmp_path):
    from ledger.importing.importer import import_files
    from ledger.web.app import create_app

    fits = tmp_path / "fits.jsonl"
    fits.write_bytes(_snapshot_line("a" * _padding()))
    import_files(store, [str(fits)])
    data = TestClient(create_app(store)).get("/tile/entries/000.p/1").content
    (entry,) = read_bundle(data)
    assert MAX_ENTRY - 20 < len(entry) <= MAX_ENTRY and orjson.loads(entry)["seq"] == 1


def test_an_old_ledger_holding_a_longer_entry_names_it(store, tmp_path):
    from ledger.web.app import create_app

    small = make_event("paper.snapshot", {"arxiv_id": "2601.00004", "snapshot_observed_at": "2026-01-01T00:00:00Z"})
    big = make_event("paper.snapshot", {"arxiv_id": "2601.00005", "snapshot_observed_at": "2026-01-01T00:00:00Z",
                                        "title": "c" * 70_000})
    with store.writing() as writer:  # appended as before the import check existed
        writer.append([small, big])
    served = TestClient(create_app(store))
    refused = served.get("/tile/entries/000.p/2")
    assert refused.status_code == 503 and refused.json()["error"].startswith("seq 2: its log entry is 70,")
    assert served.get("/tile/0/000.p/2").status_code == 200  # hashes do not care how long an entry is
    cli = Cli.of(store)
    published = cli("publish", "--as-of", "2026-01-02", str(tmp_path / "out"))
    assert published.exit_code == 3 and published.stderr.startswith("ledger: seq 2: its log entry is 70,")
    assert published.stderr.count("\n") == 1
    export = tmp_path / "old.jsonl"
    export.write_bytes(cli("export").stdout_bytes)
    again = Cli(str(tmp_path / "new.db"))
    assert again("init").exit_code == 0
    refused = again("import", str(export))
    assert refused.exit_code == 2 and f"{export}: line 2: paper.snapshot event of 70," in refused.stderr


@pytest.mark.slow
def test_serve_fails_in_one_line_on_a_port_in_use(tmp_path, unused_port):
    import socket

    db = tmp_path / "ledger.db"
    assert run_ledger("--db", str(db), "init").returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", unused_port))
        taken.listen()
        result = run_ledger("--db", str(db), "serve", "--port", str(unused_port), timeout=60)
    assert result.returncode == 3 and result.stderr.decode().startswith(f"ledger: cannot listen on 127.0.0.1:{unused_port}")
    missing = run_ledger("--db", str(tmp_path / "typo.db"), "serve", "--port", str(unused_port), timeout=60)
    assert missing.returncode == 2 and b"no ledger here" in missing.stderr and b"Traceback" not in missing.stderr
