"""The sentences the verify commands print: each verifier returns the facts it proved (`ledger.audit.results`,
`ledger.services.verify`), and this module words them, the same words on stdout and in `--json`'s "account".
It never verifies anything: a result that reaches it has passed.
"""

from __future__ import annotations

from ledger.audit.results import Evidence, Included, IndexMatch, PaperCount, Prefix
from ledger.log.chain import hex_hash
from ledger.model.parts import counted
from ledger.services.backup import ManifestCheck
from ledger.services.verify import ChainHead, RecordCheck
from ledger.services.verify_store import StoreCheck


def proof_account(proved: Included | Prefix | PaperCount) -> str:
    """`verify-proof`: what an inclusion, consistency or paper index proof proved."""
    if isinstance(proved, Included):
        # The user asked by seq; the proof counts leaves from 0 (leaf_index = seq - 1): speak of the event.
        return f"ok: event {proved.leaf_index + 1} is in the tree of size {proved.tree_size} signed by {proved.signer}"
    if isinstance(proved, Prefix):
        return (f"ok: the tree of size {proved.old_size} is a prefix of the tree of size {proved.new_size} signed by "
                f"{proved.signer}")
    if proved.count == 0:
        return (f"ok: arXiv:{proved.paper} has no events in the paper index of the tree of size {proved.tree_size} "
                f"signed by {proved.signer}")
    return (f"ok: arXiv:{proved.paper} has {counted(proved.count, 'event')} (events root {proved.events_root.hex()}) in the "
            f"paper index of the tree of size {proved.tree_size} signed by {proved.signer}")


def bundle_account(proved: Evidence) -> str:
    """`verify --evidence`: the events, the record they rebuild, and whether the bundle is proven complete."""
    known = f" known at {proved.known_at}" if proved.known_at is not None else ""
    account = (f"ok: {counted(proved.events, 'event')} {'is' if proved.events == 1 else 'are'} in the log of size {proved.tree_size} signed by {proved.signer}, and "
               f"the record of arXiv:{proved.paper} as of {proved.as_of}{known} is exactly their rebuild")
    if proved.indexed is not None:
        return (f"{account}; complete: the signed paper index counts {counted(proved.indexed, 'event')} of arXiv:{proved.paper} "
                f"in the log of size {proved.tree_size}, and the bundle holds every one")
    return (f"{account}; completeness not proven: the bundle carries no paper index proof (made before the index), "
            "so events of the paper may have been left out")


def index_account(proved: IndexMatch, checkpoint: str) -> str:
    """`verify --index`: the monitor's re-computation matched the index `checkpoint` (its file) signs."""
    return (f"ok: the paper index {checkpoint} signs at size {proved.tree_size} is the log's: {counted(proved.papers, 'paper')}, "
            f"re-computed from {counted(proved.tree_size, 'event')}")


def chain_account(head: ChainHead) -> str:
    """`verify` with no file: the whole chain re-computed."""
    return f"ok: {counted(head.seq, 'event')}, every entry hash and chain link re-computes; head {head.seq} {hex_hash(head.chain)}"


def store_account(check: StoreCheck) -> str:
    """`verify --full`: the chain, and every row derived from it, re-derived and equal."""
    head = check.head
    if check.index_size is None:
        index = "no paper index kept yet"
    else:
        index = (f"{counted(check.index_nodes, 'paper index node')} and {counted(check.index_roots, 'root')} re-hash, "
                 f"the latest (size {check.index_size}, {counted(check.index_papers, 'paper')}) re-computed from the log")
    return (f"ok: {counted(head.seq, 'event')}, every entry hash and chain link re-computes, and every row derived from "
            f"them: subject, paper and effective key of each event, {counted(check.links, 'paper link')}, "
            f"{counted(check.nodes, 'Merkle node')}; {index}; head {head.seq} {hex_hash(head.chain)}")


def record_lines(check: RecordCheck) -> list[str]:
    """`verify RECORD`: for a record that passed, its account, then one line per late fact (none for a
    record that failed: its problems are the error's lines)."""
    if check.problems:
        return []
    history = check.history
    late: list[str] = []
    if history is None and check.ledger:
        compared = f"; the ledger holds no events of arXiv:{check.paper}, history not compared"
    elif history is None:
        compared = "; no ledger, history not compared"
    elif history["agrees_now"]:
        compared = (f"; agrees with the ledger's history at {history['as_of']} (what the ledger knew "
                    f"{_spans(history['windows'])})")
    else:  # passed without agreeing now: it agreed once, and late facts changed the rebuild since
        compared = (f"; agrees with what the ledger knew {_spans(history['windows'])} (its rebuild at the record's "
                    f"as_of {history['as_of']})")
        late = [f"{check.name}: late fact: {_late(row)}" for row in history["late_facts"]]
    if check.counted:
        compared += "; " + "; ".join(check.counted) + " (past the page cap: the rest are known only by count)"
    if late:
        compared += f"; {counted(len(late), 'late fact')} recorded since changed that rebuild:"
    account = f"{check.name}: ok: {check.observations} observation digests and the context digest re-check{compared}"
    return [account] + late


def _spans(windows: list[dict]) -> str:
    return " and ".join(f"from {w['from']} until {w['until']}" if w["until"] else f"from {w['from']} on"
                        for w in windows)


def _late(row: dict) -> str:
    return (f"seq {row['seq']}, recorded {row['recorded_at']}, effective {row['effective_at']}, {row['kind']} "
            f"of {row['subject']}: {row['account']}")


def manifest_account(check: ManifestCheck) -> str:
    """`verify` of a backup: its head is the manifest's, its tree consistent with the checkpoints recorded."""
    if not check.checkpoints:
        return f"the head {check.manifest} records; no checkpoint recorded"
    sizes = ", ".join(f"{checkpoint.size:,}" for checkpoint in check.checkpoints)
    signed = "signed by " + check.checkpoints[0].origin if check.signed else "signatures not checked: no --verifier-key"
    return (f"the head {check.manifest} records, and a tree consistent with its checkpoints of size {sizes} "
            f"({signed})")
