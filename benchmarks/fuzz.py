"""Coverage-guided fuzzing of every parser of outside bytes (atheris), a job an operator runs beside the benchmarks.

    .venv/bin/pip install atheris                                 # a wheel for CPython 3.11 on x86-64 Linux
    .venv/bin/python -m benchmarks.fuzz --target notes --seconds 120    # one target, a bounded time
    .venv/bin/python -m benchmarks.fuzz --seconds 120                   # every target in turn
    .venv/bin/python -m benchmarks.fuzz --seed-corpus                   # rewrite the checked-in seeds

Each target (`TARGETS`) takes bytes as an outsider sends them and runs them through the parsers of one family
(event lines, records and exported logs; signed notes, keys, cosignatures and policies; proofs and bundles;
tiles; witness requests; arXiv ids and dates). A parser may refuse with a documented error (a `LedgerError`;
the witness a `CosignRefusedError` with a 4xx status): anything else is a crash, which atheris reports with its input.
The corpus (`benchmarks/fuzz_corpus/<target>/`) starts from real inputs of a small ledger signed with fixed
keys, so a mutated proof or note still reaches the checks past its signature; `context/` holds the notes the
proofs and bundles are checked against. tests/fuzz/test_corpus.py replays it through the same targets in CI
(atheris not needed); tests/fuzz/ is the hypothesis tier. This module never sends traffic anywhere.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ledger.core.errors import LedgerError

HERE = Path(__file__).parent
CORPUS = HERE / "fuzz_corpus"
ORIGIN = "example.org/ledger"
WITNESSES = ("witness.example/w1", "witness.example/w2")
HELD = 20  # the size the witness target's state holds; the context's checkpoint is of the whole seed ledger


def _seed(name: str) -> bytes:
    """A fixed Ed25519 seed: the corpus's notes verify run after run (a test key, it signs nothing real)."""
    return hashlib.sha256(b"ledger fuzz key " + name.encode()).digest()


@dataclass(frozen=True)
class Context:
    """The signed notes of the seed ledger (by the fixed keys) that proofs, bundles and requests are checked against."""

    note: str  # the checkpoint of the whole ledger
    index_note: str  # the same tree, with its paper-index line
    cosigned: str  # `note` cosigned by both witnesses
    held_note: str  # the checkpoint of its first HELD entries, held by the witness target's state


@cache
def keys():
    """(signer, verifier, cosigners, cosigner keys, policy text), all from fixed seeds."""
    from ledger.log.cosignature import Cosigner
    from ledger.log.signed_notes import Signer

    signer = Signer(ORIGIN, _seed(ORIGIN))
    cosigners = [Cosigner(name, _seed(name)) for name in WITNESSES]
    policy = "".join(f"witness w{n} {c.key}\n" for n, c in enumerate(cosigners, 1)) + "group g any w1 w2\nquorum g\n"
    return signer, signer.verifier, cosigners, [c.key for c in cosigners], f"log {signer.verifier}\n" + policy


@cache
def context() -> Context:
    """The checked-in context notes. Raises: FileNotFoundError before `--seed-corpus` has written them."""
    read = lambda name: (CORPUS / "context" / name).read_text(encoding="utf-8")  # noqa: E731
    return Context(read("checkpoint.txt"), read("index-checkpoint.txt"), read("cosigned.txt"), read("held.txt"))


# -- the targets: bytes in, None out, or a documented refusal ------------------------------------------------
def _documented(call: Callable[..., object], *args: object) -> object:
    """`call(*args)`, a LedgerError (a documented refusal) swallowed: None then."""
    try:
        return call(*args)
    except LedgerError:
        return None


@cache
def _seed_store():
    """An in-memory ledger of the seed record, for `verify RECORD` to compare a record with its history."""
    from ledger.importing.importer import import_inputs, parse_input
    from ledger.storage.store import Store

    store = Store.create("sqlite://")
    import_inputs(store, [parse_input("seed", (CORPUS / "events" / "record.json").read_bytes())])
    return store


def target_events(data: bytes) -> None:
    """Event lines, records and exported logs: as one input (`import FILE`), cut into units of two lines as a
    large input is (`import --jobs`), when it holds log lines only loaded as `--db log.jsonl` is, and as a
    record `verify RECORD` checks, offline and against the seed ledger's history."""
    from ledger.importing.decode import decode_unit, parse_input
    from ledger.importing.importer import import_inputs
    from ledger.importing.units import Sizes, logged, read_whole
    from ledger.services.verify import compare_record
    from ledger.storage.store import Store

    _documented(compare_record, "fuzz", data, None)
    _documented(compare_record, "fuzz", data, _seed_store())
    parsed = _documented(parse_input, "fuzz", data)
    for unit in read_whole("fuzz", Sizes(chunk_lines=2), data=data):
        _documented(decode_unit, unit)
        for line in unit.lines or ():
            logged(line)
    if parsed is not None and parsed.entries and not parsed.events and parsed.record is None:
        _documented(import_inputs, Store.create("sqlite://"), [parsed])  # logfile.open_log's path


def _text(data: bytes) -> str | None:
    """The text a command reads from a file (`decode_input`), or None for bytes it refuses."""
    from ledger.core.inputs import decode_input

    return _documented(decode_input, "fuzz", data)


def target_notes(data: bytes) -> None:
    """Signed notes, checkpoints, cosignatures, keys of every kind and tlog-policies; and the log as the
    adversary: the text signed with the log's own key, as a note every reader opens and a witness is pushed
    (mutating a signed note alone never gets past its signature)."""
    from ledger.audit.quorum import witnessed
    from ledger.log.cosignature import cosignatures, parse_cosigner, parse_cosigner_key, parse_policy
    from ledger.log.signed_notes import (
        open_note,
        parse_checkpoint,
        parse_signer,
        parse_verifier,
        split_note,
        verify_checkpoint,
    )
    from ledger.services.cosigning_witness import submission

    text = _text(data)
    if text is None:
        return
    signer, verifier, _, witness_keys, policy_text = keys()
    for parse in (parse_signer, parse_verifier, parse_cosigner, parse_cosigner_key, parse_policy, split_note,
                  parse_checkpoint):
        _documented(parse, text)
    _documented(open_note, text, verifier)
    _documented(verify_checkpoint, text, verifier)
    _documented(cosignatures, text, witness_keys)
    _documented(witnessed, text, verifier, parse_policy(policy_text))
    body = text.split("\n\n")[0]
    signed = signer.sign(body if body.endswith("\n") else body + "\n")
    _documented(verify_checkpoint, signed, verifier)
    _documented(witnessed, signed, verifier, parse_policy(policy_text))
    target_witness(submission(HELD, [], signed))


def target_proofs(data: bytes) -> None:
    """Inclusion, consistency and paper index proofs, and evidence bundles (both forms), as `verify-proof`
    and `verify-bundle` read them, against the context's signed notes."""
    from ledger.audit.auditor import load_json, verify_proof
    from ledger.audit.evidence import verify_bundle

    _, verifier, *_ = keys()
    given = _documented(load_json, "fuzz", data)
    if given is None:
        return
    notes = context()
    _documented(verify_proof, given, notes.note, verifier)
    _documented(verify_proof, given, notes.index_note, verifier)
    _documented(verify_bundle, given, verifier)


def target_tiles(data: bytes) -> None:
    """Entry bundles as the monitor reads them, and tile paths as `serve` and the monitor name them."""
    from ledger.log.tiles import parse_tile_path, read_bundle

    _documented(read_bundle, data)
    text = _text(data)
    if text is not None:
        _documented(parse_tile_path, text)


def target_witness(data: bytes) -> None:
    """An add-checkpoint request, parsed and then answered by a witness whose state holds the context's
    checkpoint of HELD entries. Only a `CosignRefusedError` of status 4xx may come out."""
    from ledger.services.cosigning_witness import CosignRefusedError, parse_submission

    for call in (parse_submission, _witness().add_checkpoint):
        try:
            call(data)
        except CosignRefusedError as refused:
            if not 400 <= refused.status < 500:
                raise


@cache
def _witness_state() -> str:
    """A witness state holding HELD entries of the seed ledger (made once; every input gets a copy)."""
    from ledger.services.cosigning_witness import Witness, submission

    signer, verifier, cosigners, *_ = keys()
    # libFuzzer ends the process without running atexit: under the job the state goes in its --work folder.
    folder = tempfile.mkdtemp(prefix="ledger-fuzz-witness-", dir=os.environ.get("LEDGER_FUZZ_WORK"))
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "template.db")
    Witness(cosigners[0], {ORIGIN: verifier}, path, new=True).add_checkpoint(submission(0, [], context().held_note))
    return path


def _witness():
    from ledger.services.cosigning_witness import Witness

    template = _witness_state()
    copy = os.path.join(os.path.dirname(template), "witness.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(copy + suffix):
            os.remove(copy + suffix)
    shutil.copyfile(template, copy)
    _, verifier, cosigners, *_ = keys()
    return Witness(cosigners[0], {ORIGIN: verifier}, copy)


def target_ids(data: bytes) -> None:
    """arXiv ids and months as typed (options, paths, event lines), and dates and instants (options, fields)."""
    from ledger.core.times import When, instant_key, long_date, parse_instant, parse_when, when
    from ledger.model.arxiv import looks_like_paper_id, month_id, paper_id, parse_arxiv_id

    text = data.decode("utf-8", "surrogateescape")  # a JSON string may hold lone surrogates: so may this
    for parse in (parse_arxiv_id, paper_id, month_id, parse_instant, instant_key, parse_when, When.parse,
                  When.at, long_date):
        _documented(parse, text)
    _documented(parse_arxiv_id, text, "--paper")
    _documented(when, "--as-of", text)
    looks_like_paper_id(text)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "events": target_events, "notes": target_notes, "proofs": target_proofs, "tiles": target_tiles,
    "witness": target_witness, "ids": target_ids,
}


def corpus(target: str) -> list[bytes]:
    """The checked-in seed inputs of a target, in name order."""
    return [path.read_bytes() for path in sorted((CORPUS / target).iterdir()) if path.is_file()]


# -- the seed corpus, from a small ledger of the test fixtures -------------------------------------------------
def seed_corpus() -> dict[str, int]:
    """Write benchmarks/fuzz_corpus/ afresh: the context notes and each target's seed inputs. Returns the
    number of files per target."""
    from ledger.core.canonical import canonical
    from ledger.importing.importer import import_inputs, parse_input
    from ledger.log.chain import entry_bytes
    from ledger.log.export import export_line
    from ledger.log.tiles import bundle
    from ledger.services.cosigning_witness import submission
    from ledger.services.proofs import checkpoint, prove_consistency
    from ledger.storage.store import Store

    fixtures = HERE.parent / "tests" / "fixtures"
    record = (fixtures / "seed_004_2407.20018.json").read_bytes()
    signer, verifier, cosigners, _, policy = keys()
    folder = tempfile.mkdtemp(prefix="ledger-fuzz-seed-")
    try:
        store = Store.create(os.path.join(folder, "ledger.db"))
        parsed = parse_input("seed_004", record)
        import_inputs(store, [parsed])
        paper = parsed.paper
        entries = list(store.entries())
        note, size = checkpoint(store, signer)
        index_note, _ = checkpoint(store, signer, paper_index=True)
        text = note.split("\n\n")[0] + "\n"
        cosigned = note + "".join(c.cosign(text, 1_800_000_000 + n) for n, c in enumerate(cosigners))
        held_note, _ = checkpoint(store, signer, size=HELD)
        events_lines = b"".join(canonical({"kind": e.kind, "payload": json.loads(e.payload),
                                          "effective_at": e.effective_at}) + b"\n" for _, e in parsed.events[:6])
        exported = b"".join(export_line(entry) for entry in entries[:8])
        consistency = prove_consistency(store, HELD, size)
        seeds = {
            "events": {"record.json": record, "events.jsonl": events_lines, "exported.jsonl": exported,
                       "mixed.jsonl": exported[:exported.index(b"\n") + 1] + events_lines},
            "notes": {"checkpoint.txt": note.encode(), "index-checkpoint.txt": index_note.encode(),
                      "cosigned.txt": cosigned.encode(), "policy.txt": policy.encode(),
                      "verifier.vkey": f"{verifier}\n".encode(), "witness.vkey": f"{cosigners[0].key}\n".encode()},
            "proofs": proof_seeds(store, paper, size, signer),
            "tiles": {"bundle.bin": bundle([(e.seq, entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at,
                                                                 e.payload)) for e in entries[:4]]),
                      "path-entries.txt": b"tile/entries/x001/234.p/5", "path-level.txt": b"tile/0/000"},
            "witness": {"first.txt": submission(0, [], held_note),
                        "consistent.txt": submission(HELD, [bytes.fromhex(h) for h in consistency["path"]], note),
                        "again.txt": submission(HELD, [], held_note)},
            "ids": {"new.txt": b"2407.20018", "prefixed.txt": b"arXiv:2407.20018v2", "old.txt": b"hep-th/9901001",
                    "month.txt": b"2407", "date.txt": b"2026-08-09", "instant.txt": b"2026-08-09T16:41:00.123456+02:00"},
        }
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    context_notes = {"checkpoint.txt": note, "index-checkpoint.txt": index_note, "cosigned.txt": cosigned,
                     "held.txt": held_note}
    write_seeds(context_notes, seeds)
    context.cache_clear()
    return {target: len(files) for target, files in seeds.items()}


def proof_seeds(store, paper: str, size: int, signer) -> dict[str, bytes]:
    """The proofs target's seeds, as `ledger prove` and `ledger bundle` print them for the seed ledger."""
    from ledger.core.times import When
    from ledger.services.proofs import evidence_bundle, prove_consistency, prove_inclusion, prove_paper

    as_of = When.at("2026-08-09T16:41:00Z")

    def dumps(value) -> bytes:
        return json.dumps(value, indent=1).encode()

    return {"inclusion.json": dumps(prove_inclusion(store, 7, size)),
            "consistency.json": dumps(prove_consistency(store, 5, size)),
            "paper.json": dumps(prove_paper(store, paper, size)),
            "absent.json": dumps(prove_paper(store, "2407.99999", size)),
            "bundle.json": dumps(evidence_bundle(store, paper, as_of, signer)),
            "compact.json": dumps(evidence_bundle(store, paper, as_of, signer, compact=True))}


def write_seeds(context_notes: dict[str, str], seeds: dict[str, dict[str, bytes]]) -> None:
    """benchmarks/fuzz_corpus/ afresh: the context notes, and each target's seed inputs in a folder of its own."""
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    (CORPUS / "context").mkdir(parents=True)
    for name, value in context_notes.items():
        (CORPUS / "context" / name).write_text(value, encoding="utf-8")
    for target, files in seeds.items():
        (CORPUS / target).mkdir()
        for name, value in files.items():
            (CORPUS / target / name).write_bytes(value)


# -- the job ---------------------------------------------------------------------------------------------------
def run(target: str, seconds: int, work: Path) -> None:
    """Fuzz one target for `seconds` with atheris (libFuzzer), starting from a copy of its checked-in corpus
    in `work` (new inputs it finds go there, not into the repository). Exits the process, as libFuzzer does."""
    import atheris

    copy = work / target
    shutil.copytree(CORPUS / target, copy, dirs_exist_ok=True)
    os.environ["LEDGER_FUZZ_WORK"] = str(work)
    with atheris.instrument_imports():
        import ledger.audit.auditor  # noqa: E401,F401
        import ledger.audit.evidence
        import ledger.audit.quorum
        import ledger.core.canonical  # noqa: E401,F401
        import ledger.core.inputs
        import ledger.core.times
        import ledger.importing.decode  # noqa: E401,F401
        import ledger.importing.units
        import ledger.log.cosignature
        import ledger.log.paper_index  # noqa: E401,F401
        import ledger.log.signed_notes
        import ledger.log.tiles
        import ledger.model.arxiv  # noqa: E401,F401
        import ledger.model.events
        import ledger.model.published
        import ledger.services.cosigning_witness
        import ledger.services.verify  # noqa: E401,F401
    one = TARGETS[target]
    atheris.Setup([sys.argv[0], str(copy), f"-dict={HERE / 'fuzz.dict'}", f"-max_total_time={seconds}",
                   "-max_len=65536", "-timeout=10",
                   "-rss_limit_mb=2048", "-print_final_stats=1"], one)
    atheris.Fuzz()


def main() -> None:
    """The job: `--seed-corpus`, or fuzz one target (`--target`) or each in turn for `--seconds` each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), help="one target (default: each in turn)")
    parser.add_argument("--seconds", type=int, default=120, help="time per target (default 120)")
    parser.add_argument("--work", type=Path, help="folder for the inputs it finds (default: a new temporary one)")
    parser.add_argument("--seed-corpus", action="store_true", help="rewrite benchmarks/fuzz_corpus/ and exit")
    args = parser.parse_args()
    if args.seed_corpus:
        print(json.dumps(seed_corpus()))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="ledger-fuzz-"))
    if args.target is not None:
        run(args.target, args.seconds, work)
        return
    # libFuzzer ends its process: one child per target, one at a time.
    import subprocess

    failed = [t for t in sorted(TARGETS) if subprocess.call([sys.executable, "-m", "benchmarks.fuzz", "--target", t,
                                                            "--seconds", str(args.seconds), "--work", str(work)])]
    print(f"fuzz: {len(TARGETS) - len(failed)} of {len(TARGETS)} targets ran without a crash"
          + (f"; crashed: {', '.join(failed)} (inputs in {work})" if failed else ""), file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
