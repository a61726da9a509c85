"""The benchmark's own parts, kept working: its figures are only as good as its generator and gates.
(Timings are never asserted here; they live in benchmarks/RESULTS.md.)"""

import pytest

from benchmarks.appends import floor_append, ours_append, sql_alone, without_tree
from benchmarks.common import GateError, gate
from benchmarks.generate import PROBE, generate
from benchmarks.pg_writers import postgres_writers
from ledger.storage.store import Store
from tests.conftest import POSTGRES


def test_the_generator_is_deterministic_and_holds_the_probe_record():
    first, again = generate(2_000, seed=7), generate(2_000, seed=7)
    assert [(e.kind, e.subject, e.payload) for e in first] == [(e.kind, e.subject, e.payload) for e in again]
    assert generate(2_000, seed=8) != first
    assert any(e.paper == PROBE for e in first)
    assert {e.kind for e in first} >= {"paper.snapshot", "citation.observed", "resolution.recorded", "notice.checked"}


def test_the_contenders_write_every_row_and_pass_the_gates(tmp_path):
    events = generate(600, seed=3)
    assert ours_append(events, 100, tmp_path) > 0  # its gates: contiguous seqs, the chain verifies
    assert floor_append(events, 100, tmp_path) > 0  # its gate: every row present


def test_the_no_tree_variant_appends_a_verifiable_chain_without_nodes(tmp_path):
    events = generate(300, seed=3)
    with without_tree():
        assert ours_append(events, 100, tmp_path) > 0
        store = Store.create(str(tmp_path / "bare.db"))
        with store.writing() as writer:
            writer.append(events[:40])
        with store.reading() as cursor:
            assert cursor.execute("SELECT COUNT(*) FROM merkle_nodes").fetchone()[0] == 0
    again = Store.create(str(tmp_path / "tree.db"))  # the tree is back once the variant ends
    with again.writing() as writer:
        writer.append(events[:40])
    with again.reading() as cursor:
        assert cursor.execute("SELECT COUNT(*) FROM merkle_nodes").fetchone()[0] == 2 + 1  # 2 of 16, 1 of 32


def test_a_failed_gate_stops_the_run():
    with pytest.raises(GateError, match="rows missing"):
        gate(False, "rows missing")


def test_importing_the_same_batches_again_appends_nothing(tmp_path):
    assert ours_append(generate(300, seed=3), 100, tmp_path, again=True) > 0  # its gate: 0 appended


def test_sql_alone_replays_an_imports_exact_rows(tmp_path):
    # Its gate re-verifies the chain of the replayed rows: a replay that dropped, reordered or changed a
    # statement's rows fails it, and the run with it.
    events = generate(600, seed=3)
    assert sql_alone(events, 100, tmp_path) > 0
    replayed = sorted(tmp_path.glob("sql-*.db"))
    assert len(replayed) == 1
    store = Store.open(str(replayed[0]))
    try:
        with store.reading() as cursor:
            links = cursor.execute("SELECT COUNT(*) FROM observation_papers").fetchone()[0]
            nodes = cursor.execute("SELECT COUNT(*) FROM merkle_nodes").fetchone()[0]
    finally:
        store.close()
    assert links > 0 and nodes == 600 // 16 + 600 // 32 + 600 // 64 + 600 // 128 + 600 // 256 + 600 // 512


@pytest.mark.skipif(not POSTGRES, reason="needs LEDGER_TEST_POSTGRES")
def test_concurrent_postgres_writers_build_one_verifiable_chain(tmp_path):
    # Its gates: every writer exits 0, the sequence is contiguous, the chain verifies; the schema is dropped.
    events = generate(800, seed=4)
    assert postgres_writers(POSTGRES, events, 4, tmp_path) > 0


def test_the_index_proof_sizes_from_the_trees_shape_are_the_real_proofs_sizes(tmp_path):
    # The 1M-paper figure comes from proof_shape; here it must equal, byte for byte, the length of what
    # `prove --paper --json` prints for every paper of a real ledger (each with one event).
    from benchmarks.common import import_batch
    from benchmarks.index_costs import proof_shape, snapshots
    from ledger.core.canonical import canonical
    from ledger.log.paper_index import paper_key
    from ledger.services.proofs import prove_paper

    store = Store.create(str(tmp_path / "papers.db"))
    import_batch(store, snapshots(700))
    names = [f"1000.{n:05d}" for n in range(700)]
    keys = sorted(paper_key(name) for name in names)
    for name in names:
        proof = prove_paper(store, name)
        json_size, _, depth = proof_shape(keys, name, 700)
        assert (len(canonical(proof)) + 1, len(proof["siblings"])) == (json_size, depth), name
    store.close()


def test_index_proofs_are_timed_on_a_ledger_of_many_papers(tmp_path):
    from benchmarks.index_costs import index_proofs

    figures = index_proofs(tmp_path / "papers.db", 2_000, 5)
    assert 0 < figures["present_median"] < 1 and 0 < figures["absent_median"] < 1
    assert figures["size_max"] >= figures["size_median"] > 900


@pytest.mark.parametrize("every", [1, 2, 10])
def test_interleaved_appends_build_both_ledgers_one_with_the_index_kept(tmp_path, every):
    from benchmarks.index_costs import interleaved_appends

    # Its gates: both chains, the roots kept (after every `every`th of 5 transactions, and at the end), the
    # kept root equal to the log's re-computation.
    kept_rate, alone_rate = interleaved_appends(generate(450, seed=3), 100, every, tmp_path)
    assert kept_rate > 0 and alone_rate > 0


def test_the_serving_benchmark_checks_every_body_stops_its_server_and_keeps_its_section(tmp_path):
    from benchmarks.common import import_batch, kept_section
    from benchmarks.http_load import Server, load
    from benchmarks.run import ARCHIVE
    from benchmarks.serve import SECTION_BEGIN, SECTION_END, write_section
    from ledger.log.signed_notes import generate_signer
    from ledger.web.site import Site

    db = tmp_path / "ledger.db"
    store = Store.create(str(db))
    import_batch(store, generate(300, seed=3))
    signer = generate_signer("bench.example/ledger")
    key = tmp_path / "ledger.key"
    key.write_text(f"{signer}\n")
    expected = Site(store, signer).evidence_html().content
    server = Server(db, 1, key, limit=120)
    try:
        rate, latencies = load(server.port, "/evidence", expected, 20, 2)
        assert rate > 0 and len(latencies) == 20
        with pytest.raises(GateError, match="/evidence: status 200"):
            load(server.port, "/evidence", expected + b"!", 4, 1)  # its gate: every body is the expected bytes
    finally:
        server.stop()
    assert server.process.poll() is not None
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nfrom benchmarks.run\n")
    write_section(results, ["## Serving", "first"])
    write_section(results, ["## Serving", "second"])
    text = results.read_text()
    assert text.count(SECTION_BEGIN) == 1 and "second" in text and "first" not in text
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n")
    kept = kept_section(results, SECTION_BEGIN, SECTION_END)
    assert kept.strip().startswith(SECTION_BEGIN) and "second" in kept
    assert kept_section(results, *ARCHIVE) == ""  # no archived figures in this file: nothing kept
    results.write_text(text + f"\n{ARCHIVE[0]}\nold figures\n{ARCHIVE[1]}\n")
    assert kept_section(results, *ARCHIVE).strip().splitlines() == [ARCHIVE[0], "old figures", ARCHIVE[1]]


def test_the_index_section_replaces_only_itself(tmp_path, monkeypatch):
    import benchmarks.run as run

    monkeypatch.setattr(run, "index_section", lambda reps, folder: f"{run.INDEX_BEGIN}\n## idx {reps}\n{run.INDEX_END}\n")
    out = tmp_path / "RESULTS.md"
    out.write_text("# Benchmark results\n\nfrom benchmarks.run\n\n<!-- benchmarks.serve: begin -->\nserve\n"
                   "<!-- benchmarks.serve: end -->\n")
    run.main(["--index", "--reps", "5", "--out", str(out)])
    run.main(["--index", "--reps", "6", "--out", str(out)])
    text = out.read_text()
    assert text.count(run.INDEX_BEGIN) == 1 and "## idx 6" in text and "## idx 5" not in text
    assert text.startswith("# Benchmark results\n\nfrom benchmarks.run\n") and "serve\n" in text


def test_the_corpus_imports_whole_and_the_commands_pass_their_gates(tmp_path):
    # Every record of the corpus must be one a new ledger accepts (rebuilt byte for byte), and the event lines
    # the same facts as the ledger they came from; the command runners' gates check appended counts and chains.
    from benchmarks.whole import corpus, import_command, in_process, replay_command

    c = corpus(tmp_path / "corpus", papers=8, records=5)
    assert len(c.records) == 5 and len(c.line_events) > 100
    assert in_process(c.line_events, tmp_path) > 0
    for jobs in (1, 2):
        assert import_command([c.lines], jobs, len(c.line_events), tmp_path)[0] > 0
        assert import_command(c.records, jobs, len(c.record_events), tmp_path)[0] > 0
        rate, written, _ = replay_command(c.ledger, jobs, tmp_path, 8)
        assert rate > 0 and written == 8
    assert sorted(p.name for p in tmp_path.glob("ledger-*.db")) == []  # each run's ledger removed


def test_the_growing_imports_append_every_copy_as_new_facts(tmp_path):
    # The larger corpus must be all new facts (its gates check each command's counts: N appended, 0 present;
    # over the ledger holding the first copy, that copy present), on a file, on stdin and with two jobs.
    from benchmarks.whole import corpus, growing_imports

    c = corpus(tmp_path / "corpus", papers=8, records=5)
    runs = growing_imports(c.lines, len(c.line_events), tmp_path, times=3)
    assert len(runs) == 5 and all(seconds > 0 and peak > 0 for _, _, seconds, peak in runs)
    assert [read for _, read, _, _ in runs] == [len(c.line_events)] + [3 * len(c.line_events)] * 4
    assert "3 times as large" in runs[1][0] and f"{3 * len(c.line_events):,} lines" in runs[1][0]
    assert sorted(p.name for p in tmp_path.glob("*.db")) == [] and not list(tmp_path.glob("events-x*"))


def test_the_peers_get_the_same_leaves_and_agree_on_every_root(tmp_path):
    pytest.importorskip("pymerkle")
    pytest.importorskip("eventsourcing")
    from benchmarks.peers import peer_pair, proof_rates
    from benchmarks.whole import leaves_of

    events = generate(700, seed=3)
    leaves, ledger = leaves_of(events, tmp_path)
    assert peer_pair(events, leaves, tmp_path) > 0  # its gates: every row and leaf present
    rates = proof_rates(ledger, leaves, tmp_path, count=30)  # its gate: pymerkle's roots equal ours
    assert set(rates) == {"ours inclusion", "ours consistency", "pymerkle inclusion", "pymerkle consistency"}
    with pytest.raises(GateError, match="root differs"):
        proof_rates(ledger, leaves[:-1] + [b"not the leaf"], tmp_path, count=3)


def test_the_ceiling_and_the_start_up_run_real_processes_and_gate_a_failure(tmp_path, monkeypatch):
    from benchmarks import whole

    monkeypatch.setattr(whole, "CEILING_LOOP", "x = sum(range(1000))\n")
    assert whole.ceiling() > 0
    assert whole.startup(tmp_path) > 0  # its gate: `ledger head` exits 0 and says nothing on stderr
    monkeypatch.setattr(whole, "CEILING_LOOP", "raise SystemExit(3)\n")
    with pytest.raises(GateError, match="ceiling"):
        whole.ceiling()


def test_the_appends_section_prints_its_rows_and_targets(tmp_path):
    # run.py's appends section at a tiny size: every contender's gates pass, and it prints the rows and the
    # verdicts of the full run (the figures themselves are never asserted).
    pytest.importorskip("eventsourcing")
    from benchmarks.appends import NAMES, appends_section
    from benchmarks.common import Report

    say = Report()
    appends_section(1, tmp_path, say, say.target, events=300)
    rows = [line.split(" | ")[0] for line in say.lines if line.startswith("| ") and not line.startswith("| path")]
    assert rows == [f"| {name}" for name in NAMES.values()]
    assert [(name.split(" (")[0], ok is None) for name, ok, _ in say.verdicts] == [
        ("batched import vs the eventsourcing recorder alone", True), ("single-event appends vs peer", False),
        ("import vs executemany floor", False), ("appends keeping the Merkle tree vs without it", False)]


def test_the_sizes_section_prints_its_rows_and_targets(tmp_path, monkeypatch):
    # The sizes section on ledgers of 600 and 900 events: its gates (the probe record's shape, the event
    # counts, every paper replayed), the rows of its two tables and its verdicts, in the full run's order.
    from benchmarks import whole
    from benchmarks.common import Report
    from benchmarks.sizes import sizes_section

    monkeypatch.setattr(whole, "CEILING_LOOP", "x = sum(range(1000))\n")
    say = Report()
    sizes_section([600, 900], 1, tmp_path, say, say.target)
    rows = [line.split(" | ")[0] for line in say.lines if line.startswith("| ")]
    assert rows == ["| events", "| 600", "| 900", "| jobs", "| 1", "| 2"]
    assert [name.split(" (")[0] for name, _, _ in say.verdicts] == [
        "replay --out --jobs 2 vs --jobs 1, every paper", "rebuild statements", "rebuild latency 900 vs 600 events",
        "verify vs tight recompute loop", "peak memory 900 vs 900 events", "peak memory 900 vs 900 events",
        "peak memory of `replay --out --jobs 2` 900 vs 900 events"]
    assert all(ok is not None and detail for _, ok, detail in say.verdicts)


def test_the_auditing_witness_benchmark_cosigns_each_step_and_writes_its_section(tmp_path):
    from benchmarks.witness_audit import SECTION_BEGIN, run

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n")
    report = run(5, 1, [10, 40], tmp_path / "cache", results)
    rows = [line for line in report.lines if line.startswith("| a day's change")]
    assert [row.split("|")[2].strip() for row in rows] == ["10", "40"]  # each step gated: both cosignatures
    assert results.read_text().count(SECTION_BEGIN) == 1
    with pytest.raises(GateError, match="fewer than the steps"):
        run(5, 1, [100_000], tmp_path / "cache", None)
