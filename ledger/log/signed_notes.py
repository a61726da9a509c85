"""Signed notes and checkpoints, as C2SP `signed-note` and `tlog-checkpoint`, with Ed25519 keys.

    checkpoint = "<origin>\\n<tree size>\\n<base64 root hash>\\n" + extension lines, each ending in "\\n";
                 this ledger's one extension: "paper-index/v1 <base64 index root>\\n" (ledger.paper_index)
    signed note = checkpoint + "\\n" + "— <key name> <base64(key id || signature)>\\n"
    key id      = SHA-256(<key name> || "\\n" || 0x01 || public key)[:4]
    verifier key = "<name>+<hex key id>+<base64(0x01 || public key)>"
    signer key   = "PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 || private seed)>"

Pure functions: parsing and verifying return values or raise IntegrityError (a bad signature, another key,
another origin) or InputError (not a note, not a key).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import unicodedata
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.core.errors import InputError, IntegrityError
from ledger.core.redact import quoted

ED25519 = 0x01
DASH = "\u2014"
_NAME = re.compile(r"[^\s+]+")
# The longest key name (a log's origin, a witness's name) a new key may have, in UTF-8 bytes. It is on every
# checkpoint's first line and every signature line, and a witness takes a checkpoint of at most 16 KiB; a DNS
# name is at most 253 characters, and Sigsum's and Go's sumdb origins are far shorter.
MAX_KEY_NAME = 255


def check_key_name(name: str, what: str = "key name") -> str:
    """`name` when a new key may be named so: as C2SP signed-note names a key, non-empty UTF-8 without (Unicode)
    spaces or '+'; without control characters (a note's text may hold none but its newlines); at most
    MAX_KEY_NAME bytes.
    Raises: InputError saying which rule `name` breaks (quoting it through `quoted`, shortened)."""
    if not name:
        raise InputError(f"{what}: empty; expected a name such as example.org/ledger")
    if not _NAME.fullmatch(name):
        raise InputError(f"{what} {quoted(name)}: must not contain spaces or '+'")
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in name):
        raise InputError(f"{what} {quoted(name)}: must not contain control characters (a signed note's text "
                         "may hold none)")
    if len(name.encode()) > MAX_KEY_NAME:
        raise InputError(f"{what} {quoted(name, 40)}: {len(name.encode())} bytes, longer than the limit of "
                         f"{MAX_KEY_NAME}")
    return name


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # The text is not echoed: it may be (part of) a key, and errors end up in terminal logs.
        raise InputError(f"{what}: not base64 ({len(text)} characters)") from None


def key_id(name: str, public: bytes) -> bytes:
    """The 4-byte key id of a signed-note Ed25519 key."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public).digest()[:4]


@dataclass(frozen=True)
class Verifier:
    name: str
    id: bytes
    public: bytes

    def __str__(self) -> str:
        return f"{self.name}+{self.id.hex()}+{base64.b64encode(bytes([ED25519]) + self.public).decode()}"


@dataclass(frozen=True)
class Signer:
    name: str
    seed: bytes

    @property
    def verifier(self) -> Verifier:
        public = Ed25519PrivateKey.from_private_bytes(self.seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return Verifier(self.name, key_id(self.name, public), public)

    def __str__(self) -> str:
        v = self.verifier
        return f"PRIVATE+KEY+{self.name}+{v.id.hex()}+{base64.b64encode(bytes([ED25519]) + self.seed).decode()}"

    def sign(self, text: str) -> str:
        """The signed note: `text` (ending in a newline), a blank line, one signature line.
        Raises: InputError when the text does not end with a newline."""
        if not text.endswith("\n"):
            raise InputError("a note's text must end with a newline")
        signature = Ed25519PrivateKey.from_private_bytes(self.seed).sign(text.encode())
        blob = base64.b64encode(self.verifier.id + signature).decode()
        return f"{text}\n{DASH} {self.name} {blob}\n"


def generate_signer(name: str) -> Signer:
    """A new Ed25519 signing key named `name`.
    Raises: InputError for a name `check_key_name` refuses."""
    check_key_name(name, "origin")
    return Signer(name, Ed25519PrivateKey.generate().private_bytes_raw())


def parse_signer(text: str) -> Signer:
    """A signing key from its text form.
    Raises: InputError when it is not one."""
    parts = text.strip().split("+", 4)  # the base64 key itself may contain '+'
    if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
        if len(parts) >= 3:  # <name>+<id>+<key>
            raise InputError("holds a verifier key (<name>+<id>+<key>), not a signing key (PRIVATE+KEY+...)")
        raise InputError("signer key: expected PRIVATE+KEY+<name>+<id>+<key>")
    raw = _b64decode(parts[4], "signer key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise InputError("signer key: not an Ed25519 key")
    signer = Signer(parts[2], raw[1:])
    if signer.verifier.id.hex() != parts[3]:
        raise InputError("signer key: key id does not match the key")
    return signer


def parse_verifier(text: str) -> Verifier:
    """A verifier key from its text form.
    Raises: InputError when it is not one."""
    if text.strip().startswith("PRIVATE+KEY+"):
        raise InputError("holds a signing key (PRIVATE+KEY+...), not a verifier key: give the .vkey that "
                         "`ledger keygen` wrote beside it")
    parts = text.strip().split("+", 2)  # the base64 key itself may contain '+'
    if len(parts) != 3:
        raise InputError("verifier key: expected <name>+<id>+<key>")
    raw = _b64decode(parts[2], "verifier key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise InputError("verifier key: not an Ed25519 key")
    verifier = Verifier(parts[0], key_id(parts[0], raw[1:]), raw[1:])
    if verifier.id.hex() != parts[1]:
        raise InputError("verifier key: key id does not match the key")
    return verifier


def split_note(note: str) -> tuple[str, list[str]]:
    """A signed note's text (ending in a newline) and its signature lines (without theirs).
    Raises: InputError when there is no blank line before signature lines."""
    text, sep, signatures = note.rpartition("\n\n")
    if not sep or not signatures.endswith("\n"):
        raise InputError("signed note: expected text, a blank line and signature lines")
    return text + "\n", signatures[:-1].split("\n")


def open_note(note: str, verifier: Verifier) -> str:
    """Return the note's text when a signature line by `verifier` verifies over it.
    Raises: InputError for a malformed note, IntegrityError when no signature by `verifier` verifies."""
    text, signatures = split_note(note)
    for line in signatures:
        match = re.fullmatch(rf"{DASH} (\S+) (\S+)", line)
        if not match:
            raise InputError(f"signed note: malformed signature line {quoted(line)}")
        name, blob = match.groups()
        raw = _b64decode(blob, "signature")
        if name != verifier.name or raw[:4] != verifier.id or len(raw) != 68:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(verifier.public).verify(raw[4:], text.encode())
        except InvalidSignature:
            raise IntegrityError(f"signed note: the signature by {name} does not verify") from None
        return text
    raise IntegrityError(f"signed note: no signature by the key {verifier.name}+{verifier.id.hex()}")


INDEX_EXTENSION = "paper-index/v1"  # the extension line binding the paper index root to the tree size


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    index_root: bytes | None = None  # the paper index at this size, when the note carries it
    extensions: tuple[str, ...] = ()  # other extension lines, kept as read

    def same_tree(self, other: Checkpoint) -> bool:
        """Whether both are of one tree (origin, size and root), whatever else their notes say."""
        return (self.origin, self.size, self.root) == (other.origin, other.size, other.root)

    def text(self) -> str:
        """The checkpoint body (origin, size, base64 root, then the extension lines), each line ending in a
        newline."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode()]
        if self.index_root is not None:
            lines.append(f"{INDEX_EXTENSION} {base64.b64encode(self.index_root).decode()}")
        return "\n".join(lines + list(self.extensions)) + "\n"


def parse_checkpoint(text: str) -> Checkpoint:
    """The checkpoint in a note body: origin, size, root, then any extension lines (C2SP: a reader that does
    not know one still reads the checkpoint).
    Raises: InputError when it is not one, or when the paper index line is malformed or given twice."""
    lines = text.split("\n")
    # A size of 64 bits at most (SQLite's INTEGER): int() of a longer one is slow, and of 4,300 digits raises.
    if len(lines) < 4 or not lines[0] or not re.fullmatch(r"0|[1-9][0-9]{0,18}", lines[1]) \
            or int(lines[1]) >= 1 << 63 or lines[-1] != "" or "" in lines[3:-1]:
        raise InputError("checkpoint: expected origin, tree size and root hash lines (then extension lines)")
    root = _b64decode(lines[2], "checkpoint root hash")
    if len(root) != 32:
        raise InputError("checkpoint: the root hash is not 32 bytes")
    index_root, others = None, []
    for line in lines[3:-1]:
        word, _, value = line.partition(" ")
        if word != INDEX_EXTENSION:
            others.append(line)
            continue
        if index_root is not None:
            raise InputError(f"checkpoint: the {INDEX_EXTENSION} line is given twice")
        index_root = _b64decode(value, f"checkpoint {INDEX_EXTENSION} line")
        if len(index_root) != 32:
            raise InputError(f"checkpoint: the {INDEX_EXTENSION} root is not 32 bytes")
    return Checkpoint(lines[0], int(lines[1]), root, index_root, tuple(others))


def verify_checkpoint(note: str, verifier: Verifier) -> Checkpoint:
    """The checkpoint a signed note carries, after checking its signature and that its origin is the key's.
    Raises: InputError for a malformed note, IntegrityError for a bad or missing signature or another origin."""
    checkpoint = parse_checkpoint(open_note(note, verifier))
    if checkpoint.origin != verifier.name:
        raise IntegrityError(f"checkpoint: origin {quoted(checkpoint.origin)} is not the verifier key's {quoted(verifier.name)}")
    return checkpoint
