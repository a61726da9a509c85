"""Cosignatures, as C2SP `tlog-cosignature` (cosignature/v1, Ed25519), and the policies that count them, as
C2SP `tlog-policy`: what a witness adds to a checkpoint it has checked is consistent with every one it cosigned.

    key id        = SHA-256(<name> || "\\n" || 0x04 || public key)[:4]
    cosigner vkey = "<name>+<hex key id>+<base64(0x04 || public key)>"
    cosigner key  = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x04 || private seed)>"
    signed        = "cosignature/v1\\n" "time <seconds>\\n" + the checkpoint's whole text (extension lines too)
    line          = "— <name> <base64(key id || uint64 big-endian seconds || Ed25519 signature)>"

Pure functions: parsing returns values or raises InputError (not a key, not a policy); verifying raises
IntegrityError (a signature by a known key that does not verify).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.core.errors import InputError, IntegrityError
from ledger.core.redact import quoted
from ledger.log.signed_notes import DASH, _b64decode, check_key_name, split_note

COSIGNATURE_V1 = 0x04
MAX_TIME = 2**63 - 1  # tlog-cosignature: the timestamp MUST NOT exceed it


def cosigner_key_id(name: str, public: bytes) -> bytes:
    """The 4-byte key id of a cosignature/v1 key."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([COSIGNATURE_V1]) + public).digest()[:4]


def cosigned_message(text: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs: its header lines, then the checkpoint text (ending in a newline).
    Raises: InputError for a text without its final newline or a timestamp out of range."""
    if not text.endswith("\n"):
        raise InputError("a checkpoint's text must end with a newline")
    if not 0 <= timestamp <= MAX_TIME:
        raise InputError(f"cosignature timestamp {timestamp} is out of range")
    return f"cosignature/v1\ntime {timestamp}\n".encode() + text.encode()


@dataclass(frozen=True)
class CosignerKey:
    """A witness's public key: it names the witness in a policy and checks its cosignatures."""
    name: str
    id: bytes
    public: bytes

    def __str__(self) -> str:
        return f"{self.name}+{self.id.hex()}+{base64.b64encode(bytes([COSIGNATURE_V1]) + self.public).decode()}"

    def timestamp(self, text: str, line: str) -> int | None:
        """The time a signature line of a note over `text` cosigned it, when the line is this key's; None for
        another key's line (tlog-cosignature: lines of unknown keys are ignored).
        Raises: IntegrityError when the line is this key's (name and id) and does not verify."""
        match = re.fullmatch(rf"{DASH} (\S+) (\S+)", line)
        if not match or match.group(1) != self.name:
            return None
        try:
            raw = base64.b64decode(match.group(2), validate=True)
        except ValueError:
            return None
        if raw[:4] != self.id:
            return None
        timestamp = int.from_bytes(raw[4:12], "big")
        if len(raw) != 76:
            raise IntegrityError(f"the cosignature by {self.name} is not 76 bytes")
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(raw[12:], cosigned_message(text, timestamp))
        except (InvalidSignature, InputError):
            raise IntegrityError(f"the cosignature by {self.name} does not verify") from None
        return timestamp


@dataclass(frozen=True)
class Cosigner:
    """A witness's signing key."""
    name: str
    seed: bytes

    @property
    def key(self) -> CosignerKey:
        public = Ed25519PrivateKey.from_private_bytes(self.seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return CosignerKey(self.name, cosigner_key_id(self.name, public), public)

    def __str__(self) -> str:
        k = self.key
        return f"PRIVATE+KEY+{self.name}+{k.id.hex()}+{base64.b64encode(bytes([COSIGNATURE_V1]) + self.seed).decode()}"

    def cosign(self, text: str, timestamp: int) -> str:
        """The signature line (ending in a newline) cosigning the checkpoint `text` at `timestamp` (seconds).
        Raises: InputError for a text without its final newline or a timestamp out of range."""
        signature = Ed25519PrivateKey.from_private_bytes(self.seed).sign(cosigned_message(text, timestamp))
        blob = base64.b64encode(self.key.id + timestamp.to_bytes(8, "big") + signature).decode()
        return f"{DASH} {self.name} {blob}\n"


def generate_cosigner(name: str) -> Cosigner:
    """A new cosignature/v1 key named `name`.
    Raises: InputError for a name `check_key_name` refuses."""
    check_key_name(name, "--cosigner")
    return Cosigner(name, Ed25519PrivateKey.generate().private_bytes_raw())


def _key_parts(text: str, private: bool) -> tuple[str, str, bytes]:
    """(name, hex id, key bytes) of a cosigner key's text form, its type byte checked."""
    what = "cosigner key" if private else "cosigner verifier key"
    parts = text.strip().split("+", 4 if private else 2)  # the base64 key itself may contain '+'
    if private and (len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]):
        raise InputError(f"{what}: expected PRIVATE+KEY+<name>+<id>+<key>")
    if not private and (len(parts) != 3 or text.strip().startswith("PRIVATE+KEY+")):
        raise InputError(f"{what}: expected <name>+<id>+<key>")
    name, id_hex, blob = parts[-3:]
    raw = _b64decode(blob, what)
    if len(raw) != 33 or raw[0] != COSIGNATURE_V1:
        raise InputError(f"{what}: not a cosignature/v1 (Ed25519, type 0x04) key")
    return name, id_hex, raw[1:]


def parse_cosigner(text: str) -> Cosigner:
    """A cosigner's signing key from its text form.
    Raises: InputError when it is not one, or its key id does not match."""
    name, id_hex, seed = _key_parts(text, private=True)
    cosigner = Cosigner(name, seed)
    if cosigner.key.id.hex() != id_hex:
        raise InputError("cosigner key: key id does not match the key")
    return cosigner


def parse_cosigner_key(text: str) -> CosignerKey:
    """A witness's public key from its vkey form.
    Raises: InputError when it is not one, or its key id does not match."""
    name, id_hex, public = _key_parts(text, private=False)
    key = CosignerKey(name, cosigner_key_id(name, public), public)
    if key.id.hex() != id_hex:
        raise InputError("cosigner verifier key: key id does not match the key")
    return key


def cosignatures(note: str, keys: list[CosignerKey]) -> dict[str, int]:
    """The witnesses among `keys` whose cosignature of the note's text verifies: name -> timestamp. Lines of
    other keys are ignored.
    Raises: InputError for a malformed note; IntegrityError for a known key's line that does not verify."""
    text, lines = split_note(note)
    found = {}
    for line in lines:
        for key in keys:
            timestamp = key.timestamp(text, line)
            if timestamp is not None:
                found[key.name] = timestamp
    return found


# -- policies (C2SP tlog-policy) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Group:
    threshold: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    """Which witnesses must have cosigned: `quorum` names a witness or group (None: no cosignature needed)."""
    witnesses: dict[str, CosignerKey]
    groups: dict[str, Group]
    quorum: str | None
    logs: tuple[str, ...] = ()  # the policy's log vkeys, as written
    urls: tuple[tuple[str, str], ...] = ()  # (witness name, its submission prefix) for witness lines with one

    def met(self, signed: set[str] | dict[str, int]) -> bool:
        """Whether the witnesses named in `signed` (by their policy names) satisfy the quorum."""
        return self.quorum is None or self._met(self.quorum, set(signed))

    def _met(self, name: str, signed: set[str]) -> bool:
        if name in self.witnesses:
            return name in signed
        group = self.groups[name]
        return sum(self._met(member, signed) for member in group.members) >= group.threshold

    def cosigned(self, note: str) -> dict[str, int]:
        """The policy's witnesses that cosigned `note`: policy name -> timestamp.
        Raises: InputError for a malformed note; IntegrityError for a bad cosignature by a listed key."""
        by_key = cosignatures(note, list(self.witnesses.values()))
        return {name: by_key[key.name] for name, key in self.witnesses.items() if key.name in by_key}


@dataclass(frozen=True)
class WitnessPolicy:
    """A command's witness options, parsed once (`cli.common.witness_policy`) and handed to what checks or asks
    for cosignatures, as sigstore-python's verifiers are handed a policy: `rule`, the witnesses and the quorum
    they must meet, and where to count them: the text of the cosigned checkpoint `cosigned` (read from the file
    `cosigned_name`), or None: on the checkpoint the proof or bundle is checked against (or one it carries)."""
    rule: Policy
    cosigned: str | None = None
    cosigned_name: str = "--cosigned"


def quorum_policy(keys: list[CosignerKey], quorum: int) -> Policy:
    """The policy of `--witness-key` (repeated) and `--quorum N`: any N of the keys.
    Raises: InputError for a quorum above the number of keys, or a key given twice."""
    if len({(k.name, k.id) for k in keys}) != len(keys):
        raise InputError("a witness key is given twice")
    if not 0 <= quorum <= len(keys):
        raise InputError(f"--quorum {quorum}: must be between 0 and the {len(keys)} witness keys given")
    witnesses = {key.name: key for key in keys}
    if quorum == 0:
        return Policy(witnesses, {}, None)
    return Policy(witnesses, {"quorum": Group(quorum, tuple(witnesses))}, "quorum")


def policy_of(keys: list[CosignerKey], quorum: int | None, policy: Policy | None, log: str,
              key_option: str, source: str = "--policy") -> Policy | None:
    """The witness policy a command's options give (`cli.common.witness_policy` reads them, for the log's
    commands and the verifiers' alike): the keys of `key_option` (repeated) with `--quorum` (default: all of
    them), or a tlog-policy read from `source`, whose log lines, when it has any, must list the log's key `log`;
    None when neither is given.
    Raises: InputError for options that do not go together, or a policy for another log."""
    if policy is not None and (keys or quorum is not None):
        raise InputError(f"--policy: give it or {key_option} with --quorum, not both")
    if policy is None and not keys:
        if quorum is not None:
            raise InputError(f"--quorum counts witnesses: give {key_option} or --policy")
        return None
    if policy is None:
        return quorum_policy(keys, len(keys) if quorum is None else quorum)
    if policy.logs and log not in policy.logs:
        raise InputError(f"{source}: its log lines do not list the log's key {quoted(log)}")
    return policy


def parse_policy(text: str) -> Policy:
    """A C2SP tlog-policy file: `log`, `witness <name> <vkey> [url]`, `group <name> all|any|<k> <names>`,
    `quorum <name>|none`; blank and `#` lines ignored; a name only after the line that defines it.
    Raises: InputError naming the line and what is wrong with it."""
    witnesses: dict[str, CosignerKey] = {}
    groups: dict[str, Group] = {}
    logs, urls, quorum, seen_quorum = [], [], None, False
    for number, raw in enumerate(text.split("\n"), start=1):
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue

        def bad(why: str) -> InputError:
            return InputError(f"policy line {number}: {why}")  # noqa: B023 (called within this iteration)

        kind, args = words[0], words[1:]
        if kind == "log" and len(args) in (1, 2):
            logs.append(args[0])
        elif kind == "witness" and len(args) in (2, 3):
            if args[0] in witnesses or args[0] in groups or args[0] == "none":
                raise bad(f"the name {quoted(args[0])} is already used")
            key = parse_cosigner_key(args[1])
            if any(k.public == key.public for k in witnesses.values()):
                raise bad("this witness key is listed twice")
            witnesses[args[0]] = key
            if len(args) == 3:
                urls.append((args[0], args[2]))
        elif kind == "group" and len(args) >= 3:
            name, threshold, members = args[0], args[1], args[2:]
            if name in witnesses or name in groups or name == "none":
                raise bad(f"the name {quoted(name)} is already used")
            unknown = [m for m in members if m not in witnesses and m not in groups]
            if unknown or len(set(members)) != len(members):
                raise bad(f"members must be defined earlier and named once: {quoted(' '.join(unknown or members))}")
            k = {"all": len(members), "any": 1}.get(threshold)
            if k is None and re.fullmatch(r"[1-9][0-9]{0,8}", threshold):  # int() of 4,300 digits raises
                k = int(threshold)
            if k is None or not 1 <= k <= len(members):
                raise bad(f"threshold {quoted(threshold)}: expected all, any or 1 to {len(members)}")
            groups[name] = Group(k, tuple(members))
        elif kind == "quorum" and len(args) == 1:
            if seen_quorum:
                raise bad("a second quorum line")
            if args[0] != "none" and args[0] not in witnesses and args[0] not in groups:
                raise bad(f"quorum {quoted(args[0])} is not a witness or group defined earlier")
            quorum, seen_quorum = (None if args[0] == "none" else args[0]), True
        else:
            raise bad(f"expected log, witness, group or quorum with their arguments, not {quoted(kind)}")
    if not seen_quorum:
        raise InputError("policy: no quorum line")
    return Policy(witnesses, groups, quorum, tuple(logs), tuple(urls))
