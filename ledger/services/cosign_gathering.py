"""A log collecting cosignatures: its checkpoint sent to each witness (C2SP tlog-witness `add-checkpoint`) with
a consistency proof from the size that witness holds, all witnesses at once, each request with a timeout.

The log keeps no record of what each witness holds: it sends `old 0` first and learns the size from the
witness's 409 (`text/x.tlog.size`), then sends the proof from there; one extra round trip, and no state to go
stale. Every request goes through the one client (`ledger.services.fetch`), all of them under one deadline:
`checkpoint --witness --timeout S` is over in S seconds whatever a witness does. A 409 that names the size just sent is the older spec's answer to "that size with another root"
(C2SP PR #280 made it 422) and is reported as such. Proofs come from the store in the caller's thread
(a Store is not thread-safe); only the HTTP requests run in parallel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ledger.core.errors import IntegrityError
from ledger.core.redact import quoted
from ledger.log.cosignature import CosignerKey, Policy
from ledger.log.signed_notes import Checkpoint
from ledger.model.parts import counted
from ledger.services.cosigning_witness import SIZE_TYPE, submission
from ledger.services.fetch import Deadline, DeadlineError, UnreachableError, post, post_answer

ROUNDS = 3  # old 0, then the size the 409 named, then once more if a push from elsewhere moved it meanwhile
REASON = 400  # characters of a refusal's line reported: an auditing witness's names an entry or two roots
PAUSE = 5.0  # seconds at most between asks when a witness answers 503 with Retry-After (its audit not done)


@dataclass(frozen=True)
class Target:
    """A witness to ask: its name in the policy, its submission prefix, its key."""
    name: str
    url: str
    key: CosignerKey


@dataclass
class Answer:
    target: Target
    line: str | None = None  # its cosignature line (ending in a newline), when it cosigned
    why: str | None = None  # why not, in a few words
    index_line: str | None = None  # its cosignature of the paper index note, when it audited the tree


def _ask(target: Target, old: int, proof: list[bytes], note: str, text: str,
         deadline: Deadline) -> tuple[str, object]:
    """One request: ("cosigned", line), ("held", size) for a 409, or ("refused", why)."""
    url = target.url.rstrip("/") + "/add-checkpoint"
    try:
        status, kind, body = _posted(url, submission(old, proof, note), deadline)
    except DeadlineError:
        return "refused", f"no answer within {deadline.seconds:g} s"
    except UnreachableError as exc:
        return "refused", f"unreachable at {exc}"
    words = body.decode("utf-8", "replace").strip().split("\n")[0][:REASON]
    if status == 409:
        if kind.split(";")[0].strip() != SIZE_TYPE or not words.isdigit():
            # the peer's words are quoted (redacted, escaped, shortened): its ESC or CR never reaches a terminal
            return "refused", f"answered 409 without its size ({quoted(kind) if kind else 'no content type'})"
        return "held", int(words)
    if status != 200:
        return "refused", f"answered {status}: {quoted(words, REASON) if words else '(no reason given)'}"
    try:
        lines = body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return "refused", "answered 200 with a body that is not UTF-8"
    for line in lines:
        try:
            if target.key.timestamp(text, line) is not None:
                return "cosigned", line + "\n"
        except IntegrityError:
            return "refused", "answered a cosignature by its key that does not verify"
    return "refused", "answered 200 without a cosignature by its key"


def _posted(url: str, body: bytes, deadline: Deadline) -> tuple[int, str, bytes]:
    """(status, content type, body) of a POST, asked again after each 503 with a Retry-After (an auditing
    witness still checking the tree), waiting what it says (at most PAUSE), while the deadline leaves time.
    Raises: UnreachableError (DeadlineError past the deadline)."""
    while True:
        status, headers, answer = post_answer(url, body, "witness answer", deadline)
        after = headers.get("Retry-After", "")
        if status != 503 or not after.isdigit():
            return status, headers.get("Content-Type", ""), answer
        pause = min(float(after), PAUSE)
        if deadline.left(url) <= pause:
            return status, headers.get("Content-Type", ""), answer  # no time to ask again: its refusal stands
        time.sleep(pause)  # the witness said when to ask again


def _ask_index(target: Target, index_note: str, text: str, deadline: Deadline) -> str | None:
    """The witness's cosignature line of the paper index note (`POST /paper-index`), when it audited the tree
    and gives one that verifies; None for a plain witness (404), any other answer, or none in time."""
    try:
        status, _, body = post(target.url.rstrip("/") + "/paper-index", index_note.encode(), "witness answer",
                               deadline)
    except UnreachableError:
        return None
    lines = body.decode("utf-8", "replace").split("\n") if status == 200 else []
    for line in lines:
        try:
            if target.key.timestamp(text, line) is not None:
                return line + "\n"
        except IntegrityError:
            return None
    return None


def collect(note: str, checkpoint: Checkpoint, targets: list[Target], prove: Callable[[int], list[bytes]],
            timeout: float, index: Callable[[], tuple[str, str]] | None = None) -> list[Answer]:
    """Each witness's answer to the signed `note` of `checkpoint`; `prove(old)` gives the consistency proof
    from size `old` to the checkpoint's (empty for 0 and for its own size). Every round's requests share one
    deadline, `timeout` seconds from now: a witness still answering then is refused. `index()`: the log's
    paper index note of the tree and its text, whose cosignature each witness that cosigned is then asked
    for (an auditing witness gives one), within the same deadline."""
    text = checkpoint.text()
    deadline = Deadline(timeout)
    answers = {target.name: Answer(target) for target in targets}
    pending = {target.name: 0 for target in targets}
    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        for _ in range(ROUNDS):
            if not pending:
                break
            proofs = {old: prove(old) for old in set(pending.values())}
            asked = {name: pool.submit(_ask, answers[name].target, old, proofs[old], note, text, deadline)
                     for name, old in pending.items()}
            sent, pending = pending, {}
            for name, future in asked.items():
                outcome, value = future.result()
                if outcome == "cosigned":
                    answers[name].line = value
                elif outcome == "refused":
                    answers[name].why = value
                elif value == sent[name]:
                    answers[name].why = (f"holds size {value} with another root (409 as before C2SP PR #280): "
                                         f"the log or the witness has forked")
                elif value > checkpoint.size:
                    answers[name].why = f"holds a larger tree ({value}) than this checkpoint ({checkpoint.size})"
                else:
                    pending[name] = value
        for name in pending:
            answers[name].why = "its size kept changing while it was asked"
        if index is not None:  # the auditing witnesses among those that cosigned: their index cosignatures
            signers = [a for a in answers.values() if a.line is not None]
            index_note, index_text = index() if signers else ("", "")
            asked_index = {a.target.name: pool.submit(_ask_index, a.target, index_note, index_text, deadline)
                           for a in signers}
            for name, future in asked_index.items():
                answers[name].index_line = future.result()
    return list(answers.values())


def targets_of(witnesses: list[tuple[str, CosignerKey]], policy: Policy) -> list[Target]:
    """The witnesses to ask: those of `--witness URL=VKEY`, or the policy's witness lines with a URL."""
    if witnesses:
        return [Target(key.name, url, key) for url, key in witnesses]
    urls = dict(policy.urls)
    return [Target(name, urls[name], key) for name, key in policy.witnesses.items() if name in urls]


def cosign(note: str, checkpoint: Checkpoint, targets: list[Target], policy: Policy,
           prove: Callable[[int], list[bytes]], timeout: float,
           index: Callable[[], tuple[str, str]] | None = None) -> tuple[str, list[str], str | None]:
    """The note with the cosignatures gathered appended, a line for each witness that did not cosign, and with
    `index` (collect's) the paper index note with the cosignatures of the auditing witnesses (None: none gave one).
    Raises: IntegrityError listing those lines when the cosignatures do not meet the policy."""
    answers = collect(note, checkpoint, targets, prove, timeout, index)
    signed = {a.target.name for a in answers if a.line is not None}
    refusals = [f"witness {a.target.name}: {a.why}" for a in answers if a.line is None]
    asked = {t.name for t in targets}
    refusals += [f"witness {name}: the policy gives no URL to ask it at" for name in policy.witnesses
                 if name not in asked]
    if not policy.met(signed):
        raise IntegrityError(f"checkpoint: the witnesses' cosignatures do not meet the quorum "
                             f"({len(signed)} of {len(policy.witnesses)} cosigned)",
                             refusals + [f"checkpoint: the quorum is not met: {len(signed)} of "
                                         f"{counted(len(policy.witnesses), 'witness', 'witnesses')} cosigned"])
    audited = [a.index_line for a in answers if a.index_line is not None]
    index_cosigned = index()[0] + "".join(audited) if index is not None and audited else None
    return note + "".join(a.line for a in answers if a.line is not None), refusals, index_cosigned
