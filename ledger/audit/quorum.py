"""Whether a checkpoint was witnessed: the cosignatures a policy asks for (C2SP tlog-cosignature, counted as
C2SP tlog-policy), on a checkpoint the log's key signed, of the tree a proof or a bundle is checked against.
Lines of keys the policy does not list are ignored; a listed key's line that does not verify rejects the note.
"""

from __future__ import annotations

from ledger.core.errors import IntegrityError, LedgerError
from ledger.log.cosignature import Policy
from ledger.log.signed_notes import Checkpoint, Verifier, verify_checkpoint
from ledger.model.parts import counted


def witnessed(note: str, verifier: Verifier, policy: Policy, of: Checkpoint | None = None,
              name: str = "checkpoint") -> dict[str, int]:
    """The policy's witnesses that cosigned `note` (name -> cosignature time), when they meet its quorum.
    `of`: the tree the note must be of (origin, size and root), when the proof was checked against another
    note of it (the paper index note).
    Raises: InputError for a malformed note, or IntegrityError (the log did not sign it, it is of another tree,
    a listed witness's cosignature does not verify, or the quorum is not met: naming who cosigned)."""
    try:
        signed = verify_checkpoint(note, verifier)
        if of is not None and not signed.same_tree(of):
            raise IntegrityError(f"it is of the tree of size {signed.size}, the proof's is of size {of.size} "
                                 f"(or has another root)")
        found = policy.cosigned(note)
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None
    if not policy.met(found):
        raise IntegrityError(f"{name}: the witness policy is not met: cosigned by {', '.join(sorted(found)) or 'no witness'} "
                             f"({len(found)} of the {counted(len(policy.witnesses), 'witness', 'witnesses')} it lists)")
    return found
