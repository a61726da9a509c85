"""An auditing witness (`ledger witness serve --audit`) asked to cosign a day's change: the time from the log's
first request to the cosignature of the checkpoint and of the paper index note, for 1,000 and 10,000 new events
on a log of N events, and the witness's peak RSS after each step.

    .venv/bin/python -m benchmarks.witness_audit --papers 200          # ~20,000 events
    .venv/bin/python -m benchmarks.witness_audit --papers 1000,3000    # ~100,000 then ~300,000 events

The log is the publish benchmark's ledger (`benchmarks.publish.ledger_of`, every event of the generator's first
N papers) served by `ledger serve --key` in a process of its own; the witness is `ledger witness serve --audit`
of that URL in another, polling nothing (`--audit-poll 0`: every audit starts with the request, the worst
case). First the witness is brought to size N - (sum of the steps) (its first audit: the whole log so far,
timed and reported, not a target) and started again on the state it kept, then each step's checkpoint is pushed as `ledger checkpoint --witness`
pushes it (`cosign_gathering.collect`, the same client: 409, the proof, 503 and Retry-After until the audit is
done, then POST /paper-index). A row includes: the requests, the witness's fetch of the new tiles and bundles
from the served log, their import into its copy, the index re-computed there, the log's index note fetched,
both cosignatures. Gates: every step cosigned with the index note's cosignature verifying. The peak RSS is the
witness process's VmHWM since that restart (the steps' own). The figures go to benchmarks/RESULTS.md, in a section of their own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks.common import HERE, Report, compiled, gate, replace_section, run_main, run_stamp
from benchmarks.publish import ledger_of

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.witness_audit: begin -->", "<!-- benchmarks.witness_audit: end -->"
SECTION_TITLE = "## An auditing witness cosigning a day's change (`benchmarks.witness_audit`)"
ORIGIN = "bench.example/ledger"
NOTE = ("A row: from the log client's first request to both cosignatures (checkpoint and paper index note), the "
        "witness auditing only when asked (no --audit-poll). Peak RSS: the witness process's VmHWM; it is started "
        "again on its state after the first audit, so the steps' figure is theirs (both steps so far).")


def _cli(folder: Path, *args: str) -> None:
    made = subprocess.run([sys.executable, "-m", "ledger.cli", *args], cwd=folder, capture_output=True, text=True)
    gate(made.returncode == 0, f"ledger {' '.join(args[:3])}: {made.stderr}")


def _started(args: list[str], folder: Path, url: str, name: str) -> subprocess.Popen:
    """A server process, once it answers at `url` (any HTTP status), within 60 s."""
    process = subprocess.Popen([sys.executable, "-m", "ledger.cli", *args], cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=open(folder / f"{name}.log", "wb"), start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return process
        except urllib.error.HTTPError:
            return process
        except OSError:
            gate(process.poll() is None and time.monotonic() < deadline, f"{name} did not start: "
                 f"{(folder / f'{name}.log').read_text()[-500:]}")
            time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
    process.wait(timeout=30)


def _peak_rss(process: subprocess.Popen) -> int:
    """The process's peak resident set (VmHWM), bytes."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _push(store, signer, target, size: int, timeout: float) -> float:
    """Seconds from the first request to both cosignatures of the tree of `size`, as checkpoint --witness asks."""
    from ledger.log.signed_notes import open_note, verify_checkpoint
    from ledger.services.cosign_gathering import collect
    from ledger.services.proofs import checkpoint, prove_consistency

    note = checkpoint(store, signer, size)[0]
    index_note = checkpoint(store, signer, size, paper_index=True)[0]
    proofs = {}

    def prove(old: int) -> list[bytes]:
        if old not in proofs:
            proofs[old] = [] if old in (0, size) else [bytes.fromhex(h) for h in prove_consistency(store, old, size)["path"]]
        return proofs[old]

    prove(size - 1)  # not timed: the log's own work, not the witness's
    started = time.perf_counter()
    [answer] = collect(note, verify_checkpoint(note, signer.verifier), [target], prove, timeout,
                       lambda: (index_note, open_note(index_note, signer.verifier)))
    seconds = time.perf_counter() - started
    gate(answer.line is not None, f"size {size}: not cosigned: {answer.why}")
    gate(answer.index_line is not None, f"size {size}: the index note was not cosigned")
    return seconds


def run(papers: int, seed: int, steps: list[int], cache: Path, results: Path | None) -> Report:
    from ledger.log.cosignature import parse_cosigner_key
    from ledger.services.cosign_gathering import Target
    from ledger.services.keys import load_signer
    from ledger.storage.store import Store
    report = Report()
    built = ledger_of(papers, seed, cache)
    first = built.events - sum(steps)
    gate(first > 0, f"{built.events} events: fewer than the steps' {sum(steps)}")
    compiled()
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        folder = Path(scratch)
        shutil.copy(built.db, folder / "ledger.db")
        _cli(folder, "keygen", ORIGIN)
        _cli(folder, "keygen", "--cosigner", "w.example")
        log_port, witness_port = _free_port(), _free_port()
        log = _started(["--db", "ledger.db", "serve", "--key", "ledger.key", "--port", str(log_port)], folder,
                       f"http://127.0.0.1:{log_port}/checkpoint", "serve")
        witness = None
        store = Store.open(str(folder / "ledger.db"))
        try:
            witness_args = ["--db", "w.db", "witness", "serve", "--new", "--key", "witness.key", "--log",
                            f"{ORIGIN}=ledger.vkey", "--audit", f"{ORIGIN}=http://127.0.0.1:{log_port}", "--rate", "0",
                            "--port", str(witness_port)]
            witness = _started(witness_args, folder, f"http://127.0.0.1:{witness_port}/add-checkpoint", "witness")
            target = Target("w.example", f"http://127.0.0.1:{witness_port}",
                            parse_cosigner_key((folder / "witness.vkey").read_text().strip()))
            signer = load_signer(str(folder / "ledger.key"))
            report(f"log: {built.events:,} events ({papers} papers, seed {seed}), served by `ledger serve`; "
                   f"run {run_stamp()}, Python {sys.version.split()[0]}")
            report("| step | new events | request to both cosignatures | witness peak RSS after |")
            report("|---|---:|---:|---:|")
            seconds = _push(store, signer, target, first, 1800)
            report(f"| first audit (the whole log so far) | {first:,} | {seconds:.1f} s | "
                   f"{_peak_rss(witness) / 2**20:.0f} MiB |")
            _stop(witness)  # started again on the state it kept: each step's peak RSS is its own
            again = [arg for arg in witness_args if arg != "--new"]
            witness = _started(again, folder, f"http://127.0.0.1:{witness_port}/add-checkpoint", "witness")
            size = first
            for step in steps:
                size += step
                seconds = _push(store, signer, target, size, 600)
                report(f"| a day's change | {step:,} | {seconds:.2f} s | {_peak_rss(witness) / 2**20:.0f} MiB |")
        finally:
            store.close()
            for process in (witness, log):
                if process is not None:
                    _stop(process)
    if results is not None:
        write_section(results, report.lines)
    return report


def write_section(results: Path, lines: list[str]) -> None:
    """This benchmark's section of the results file, in place of the one there."""
    section = "\n".join([SECTION_BEGIN, SECTION_TITLE, "", *lines, SECTION_END])
    replace_section(results, section, SECTION_BEGIN, SECTION_END)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", default="200", help="generated papers in the log (~100 events each); "
                                                         "comma-separated: one log after the other")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", default="1000,10000", help="new events of each step, comma-separated")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ledger-bench")
    parser.add_argument("--no-results", action="store_true", help="do not write benchmarks/RESULTS.md")
    args = parser.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    lines: list[str] = []
    for papers in (int(p) for p in args.papers.split(",")):
        lines += run(papers, args.seed, steps, args.cache, None).lines + [""]
    if not args.no_results:
        write_section(HERE / "RESULTS.md", [f"`python -m benchmarks.witness_audit --papers {args.papers} --steps "
                                            f"{args.steps}`", "", NOTE, "", *lines[:-1]])
    return 0


if __name__ == "__main__":
    run_main(main)
