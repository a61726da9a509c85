"""Import: published records and event lines, validated in full, appended all-or-nothing. The entry points.

`import_files` reads inputs (files, directories, stdin), cuts them into units (`units`), decodes each on its
own (`decode`), here or in worker processes (`wire`), and appends them in input order in one write
transaction (`transaction`), inside which each record must rebuild byte for byte at its own `as_of`. Any
refusal rolls the whole invocation back: nothing is appended unless everything is accepted. `import_inputs`
appends inputs decoded already (`parse_input`).

With one job the units of the first `Sizes.decode_ahead` bytes of input are decoded before the transaction
begins, so the write lock of an import of that size is held for the appends only; a larger one decodes the
rest as it appends. With several jobs, the transaction begins once the first unit is decoded and appends
overlap decoding (the lock is held longer; other writers wait). Either way an import fails as if everything
had been decoded first. This package never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain, islice

from ledger.core.inputs import STDIN, input_files
from ledger.core.workers import Workers
from ledger.importing.decode import Parsed, acyclic, decode_unit, parse_entry, parse_input
from ledger.importing.transaction import Attempt, ImportResult, Progress, append_units
from ledger.importing.units import (
    CHUNK_LINES,
    DECODE_AHEAD,
    STREAM_BLOCK,
    STREAM_BYTES,
    TASK_BYTES,
    KeptStdin,
    Sizes,
    Unit,
    file_size,
    input_units,
)
from ledger.importing.wire import decoded_by
from ledger.storage.store import Store

__all__ = ["CHUNK_LINES", "DECODE_AHEAD", "STREAM_BLOCK", "STREAM_BYTES", "TASK_BYTES", "ImportResult", "Parsed",
           "Progress", "Sizes", "import_files", "import_inputs", "parse_entry", "parse_input"]


def import_files(store: Store, names: list[str], progress: Callable[[Progress], None] | None = None,
                 workers: Workers | None = None, sizes: Sizes = Sizes(), *,
                 withdraw_missing: bool = False) -> ImportResult:
    """Read, validate and import files (or `-` for stdin; a directory: the .json and .jsonl files below it,
    `inputs.input_files`) as one all-or-nothing invocation.

    `workers` (entered before `store` connected) decode in other processes; without them, or with one job,
    units are decoded here, the first `sizes.decode_ahead` bytes of input before the transaction begins.
    `progress`, when given, is called with a Progress as units are decoded and appended (the CLI shows it on
    a terminal). `sizes` cut and pace the input (`units.Sizes`); the outcome never depends on them.
    `withdraw_missing`: a record that no longer lists observations the ledger's rebuild at its as_of lists
    has them withdrawn at its as_of (one observation.withdrawn each, ahead of its events) instead of refused.

    Inputs are appended in chunks of event lines first (Attempt.CHUNKED). Should any fact turn up twice
    (stored already, as when a file is imported again, or twice in one input) or be contradicted, that
    attempt is rolled back and the chunks are appended again, each fact looked up first (Attempt.LOOK_UP): a
    fact stored already, or met in an earlier chunk of its input, is present, and a contradiction is worded
    as it is when the input is one unit. So the facts counted and every refusal's words never depend on
    chunking, and no import holds an input whole, accepted or refused.
    Raises: InputError or IntegrityError naming the file (nothing appended), or StoreError.
    """
    names = input_files(names)  # a directory: its .json and .jsonl files
    total = None if STDIN in names else sum(file_size(name) for name in names)
    stdin = KeptStdin()  # read once, for every attempt
    try:
        with acyclic():
            if workers is None or workers.jobs == 1:
                units = _decoded_here(names, stdin, sizes, progress, total)
            else:
                units = lambda: decoded_by(workers, names, stdin, sizes)  # noqa: E731
            return append_units(store, units, Attempt.CHUNKED, progress, total, withdraw_missing=withdraw_missing)
    finally:
        stdin.close()


def import_inputs(store: Store, parsed: list[Parsed]) -> ImportResult:
    """Append everything in `parsed` (whole inputs) in one transaction, or nothing.

    New facts are the common case, so they are appended without looking anything up first (Attempt.WHOLE):
    the database's unique fact key refuses a transaction that repeats a stored fact, which is then rolled
    back and run again, looking every fact up before appending it (Attempt.LOOK_UP).
    Raises: InputError (a contradiction, a record the ledger cannot reproduce), IntegrityError (an exported
    line whose hashes do not re-compute), or StoreError; nothing is appended then."""
    with acyclic():
        return append_units(store, lambda: iter(parsed), Attempt.WHOLE)


def _decoded_here(names: list[str], stdin: KeptStdin, sizes: Sizes, progress: Callable[[Progress], None] | None,
                  total: int | None) -> Callable[[], Iterator[Parsed]]:
    """One job: the units of the first `sizes.decode_ahead` bytes of input decoded now (before the write lock
    is taken), and a function giving every attempt all the units, the rest decoded as they come. Raises the
    first unit's error that cannot be decoded among those decoded now."""
    source: Iterator[Unit] | None = input_units(names, sizes, stdin)
    decoded, done, events = [], 0, 0
    for unit in source:
        item = decode_unit(unit)
        decoded.append(item)
        done, events = done + item.size, events + len(item.events) + len(item.entries)
        if progress is not None:
            progress(Progress("decoding", done, total, events))
        if done >= sizes.decode_ahead:
            break
    else:
        source = None  # every unit decoded: every attempt reads the same ones
    attempts = 0

    def units() -> Iterator[Parsed]:
        nonlocal attempts
        attempts += 1
        if source is None:
            return iter(decoded)
        # The first attempt goes on where decoding stopped; another reads the inputs again past that point.
        rest = source if attempts == 1 else islice(input_units(names, sizes, stdin), len(decoded), None)
        return chain(decoded, map(decode_unit, rest))

    return units
