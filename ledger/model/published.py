"""The published record: its well-formedness, and its digests.

A record is checked in this order, and each step only runs when the one before passed: well-formedness
(fields, types, timestamps; `InputError`, exit 2), then digests (`IntegrityError`, exit 1). Checking shape
first means a malformed record is always reported as malformed, never as a digest mismatch.
This module never reads the ledger; comparing a record with history is the importer's and verifier's job.
"""

from __future__ import annotations

import re
from typing import Any, Literal, overload

from ledger.core.canonical import parsed_digest
from ledger.core.errors import InputError, IntegrityError
from ledger.core.times import instant_key
from ledger.model.standing_notices import NOTICE_STATES

SCHEMA = "pith.paper-citation-record.v1"

RESOLUTION_STATES = (
    "verified_exact",
    "verified_fuzzy",
    "unresolved",
    "parse_uncertain",
    "malformed_identifier",
    "metadata_mismatch",
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

RECORD_FIELDS = (
    "as_of", "caps", "context_digest", "coverage", "external_citation_measurements", "inbound", "links",
    "outbound", "paper", "reference_resolution", "refusal", "schema", "standing_sources", "thesis",
)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


_MISSING = object()


def field_name(path: str, key: str) -> str:
    """The field `key` of the object at `path`, as refusals name it ("paper.arxiv_id")."""
    return f"{path}.{key}" if path else key


def field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str, nullable: bool = False) -> Any:
    """Return obj[key] after checking it exists and has the expected JSON type.
    Raises: InputError naming the field."""
    value = obj.get(key, _MISSING)
    if type(value) is kind:  # the common case, and exact: a bool is never taken for an int here
        return value
    if value is _MISSING:
        raise InputError(f"field {field_name(path, key)}: missing")
    if value is None and nullable:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python, never in JSON.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(_type_name(k()) for k in kinds) + (" or null" if nullable else "")
        raise InputError(f"field {field_name(path, key)}: expected {expected}, found {_type_name(value)}")
    return value


def shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut at 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_HEX_HASH = re.compile(r"[0-9a-fA-F]{64}")


def sha256_field(value: Any, where: str) -> bytes:
    """A SHA-256 hash written as 64 hex digits (in proofs and bundles), as bytes.
    Raises: InputError naming the field `where`."""
    if not isinstance(value, str) or not _HEX_HASH.fullmatch(value):
        raise InputError(f"field {where}: expected 64 hex digits (a SHA-256 hash), found {shown(value)}")
    return bytes.fromhex(value)


def count_field(obj: dict[str, Any], key: str, path: str = "", below: int | None = None) -> int:
    """obj[key], a non-negative integer (below `below`, when given).
    Raises: InputError naming the field."""
    value: int = field(obj, key, int, path)
    if value < 0 or (below is not None and value >= below):
        raise InputError(f"field {field_name(path, key)}: expected a non-negative integer, found {value}")
    return value


@overload
def timestamp(obj: dict[str, Any], key: str, path: str, nullable: Literal[False] = False) -> str: ...
@overload
def timestamp(obj: dict[str, Any], key: str, path: str, nullable: bool) -> str | None: ...
def timestamp(obj: dict[str, Any], key: str, path: str, nullable: bool = False) -> str | None:
    """Return obj[key], a timestamp string (or None when nullable).
    Raises: InputError naming the field."""
    value: str | None = field(obj, key, str, path, nullable)
    if value is not None:
        try:
            instant_key(value)
        except InputError as exc:
            raise InputError(f"field {field_name(path, key)}: {exc}") from None
    return value


def check_paper_snapshot(paper: Any, path: str) -> dict[str, Any]:
    """Return a paper block after checking its id and snapshot time.
    Raises: InputError naming the field."""
    if not isinstance(paper, dict):
        raise InputError(f"field {path}: expected an object, found {_type_name(paper)}")
    field(paper, "arxiv_id", str, path)
    timestamp(paper, "snapshot_observed_at", path)
    return paper


def check_citation(citation: Any, path: str) -> dict[str, Any]:
    """Return a citation after checking its shape.
    Raises: InputError naming the field."""
    if not isinstance(citation, dict):
        raise InputError(f"field {path}: expected an object, found {_type_name(citation)}")
    check_paper_snapshot(field(citation, "citing_paper", dict, path), f"{path}.citing_paper")
    cited_paper = field(citation, "cited_paper", dict, path, nullable=True)
    if cited_paper is not None:
        check_paper_snapshot(cited_paper, f"{path}.cited_paper")
    cited_work = field(citation, "cited_work", dict, path, nullable=True)
    if cited_work is not None and "snapshot_observed_at" in cited_work:
        timestamp(cited_work, "snapshot_observed_at", f"{path}.cited_work", nullable=True)
    field(citation, "reference_index", int, path)
    field(citation, "source", str, path)
    timestamp(citation, "source_observed_at", path)
    return citation


def check_resolution(resolution: Any, path: str) -> dict[str, Any]:
    """Return a resolution after checking its shape and state.
    Raises: InputError naming the field."""
    if not isinstance(resolution, dict):
        raise InputError(f"field {path}: expected an object, found {_type_name(resolution)}")
    timestamp(resolution, "observed_at", path, nullable=True)
    field(resolution, "resolver_source", str, path, nullable=True)
    status = field(resolution, "status", str, path)
    if status not in RESOLUTION_STATES:
        raise InputError(f"field {path}.status: expected one of {', '.join(RESOLUTION_STATES)}, found {status!r}")
    return resolution


def check_receipts(receipts: list[Any], path: str) -> None:
    """Check a list of source receipts.
    Raises: InputError naming the field."""
    for index, receipt in enumerate(receipts):
        where = f"{path}[{index}]"
        if not isinstance(receipt, dict):
            raise InputError(f"field {where}: expected an object, found {_type_name(receipt)}")
        field(receipt, "source", str, where)
        timestamp(receipt, "observed_at", where)


def check_notice(notice: Any, path: str) -> dict[str, Any]:
    """Return a standing notice after checking its shape and state.
    Raises: InputError naming the field."""
    if not isinstance(notice, dict):
        raise InputError(f"field {path}: expected an object, found {_type_name(notice)}")
    state = field(notice, "state", str, path)
    if state not in NOTICE_STATES:
        raise InputError(f"field {path}.state: expected one of {', '.join(NOTICE_STATES)}, found {state!r}")
    field(notice, "reason", str, path, nullable=True)
    for index, event in enumerate(field(notice, "events", list, path)):
        where = f"{path}.events[{index}]"
        if not isinstance(event, dict):
            raise InputError(f"field {where}: expected an object, found {_type_name(event)}")
        field(event, "type", str, where)  # any type is kept as given; unknown ones are never dropped
        field(event, "source", str, where)
    check_receipts(field(notice, "source_receipts", list, path), f"{path}.source_receipts")
    if "observation" in notice:
        field(notice, "observation", str, path)
    return notice


def check_observation(obs: Any, path: str) -> dict[str, Any]:
    """Return an observation after checking its shape.
    Raises: InputError naming the field."""
    if not isinstance(obs, dict):
        raise InputError(f"field {path}: expected an object, found {_type_name(obs)}")
    if not field(obs, "observation_id", str, path):
        raise InputError(f"field {path}.observation_id: empty")
    digest = field(obs, "observation_digest", str, path)
    if not _DIGEST.fullmatch(digest):
        raise InputError(f"field {path}.observation_digest: expected sha256:<64 hex>, found {digest!r}")
    check_citation(field(obs, "citation", dict, path), f"{path}.citation")
    field(obs, "links", dict, path)
    check_resolution(field(obs, "resolution", dict, path), f"{path}.resolution")
    check_notice(field(obs, "standing_notice", dict, path), f"{path}.standing_notice")
    return obs


def check_record(record: Any) -> dict[str, Any]:
    """Check a record's shape, field by field.

    Raises: InputError naming the first field that is missing, of the wrong type, or unparsable."""
    if not isinstance(record, dict):
        raise InputError(f"expected a record (a JSON object), found {_type_name(record)}")
    schema = field(record, "schema", str, "")
    if schema != SCHEMA:
        raise InputError(f"field schema: expected {SCHEMA!r}, found {schema!r}")
    for key in RECORD_FIELDS:
        if key not in record:
            raise InputError(f"field {key}: missing")
    timestamp(record, "as_of", "")
    digest = field(record, "context_digest", str, "")
    if not _DIGEST.fullmatch(digest):
        raise InputError(f"field context_digest: expected sha256:<64 hex>, found {digest!r}")
    check_paper_snapshot(field(record, "paper", dict, ""), "paper")
    for key in ("caps", "links", "reference_resolution"):
        field(record, key, dict, "")
    for key in ("refusal", "thesis"):
        field(record, key, str, "")
    field(record, "external_citation_measurements", list, "")
    check_receipts(field(record, "standing_sources", list, ""), "standing_sources")
    lanes = field(record, "coverage", list, "")
    for index, lane in enumerate(lanes):
        where = f"coverage[{index}]"
        if not isinstance(lane, dict):
            raise InputError(f"field {where}: expected an object, found {_type_name(lane)}")
        field(lane, "lane", str, where)
        field(lane, "source", str, where)
        timestamp(lane, "source_observed_at", where, nullable=True)
    seen: set[str] = set()
    for direction in ("inbound", "outbound"):
        for index, obs in enumerate(field(record, direction, list, "")):
            check_observation(obs, f"{direction}[{index}]")
            if obs["observation_id"] in seen:
                raise InputError(f"field {direction}[{index}].observation_id: {obs['observation_id']} appears twice")
            seen.add(obs["observation_id"])
    return record


def observation_digest(obs: dict[str, Any]) -> str:
    """sha256 of the canonical observation without its `observation_digest`; `obs` is parsed JSON (see
    `canonical.canonical_parsed`). Raises: InputError (a CanonicalError) for a value with no canonical form."""
    return parsed_digest({k: v for k, v in obs.items() if k != "observation_digest"})


def context_digest(record: dict[str, Any]) -> str:
    """sha256 of the canonical record without `context_digest` and `as_of` (SPEC 1); `record` is parsed JSON
    or built by the fold from parsed payloads (see `canonical.canonical_parsed`).

    Raises: InputError (a CanonicalError) for a value with no canonical form."""
    return parsed_digest({k: v for k, v in record.items() if k not in ("context_digest", "as_of")})


def digest_mismatches(record: dict[str, Any]) -> list[str]:
    """One line per digest that does not re-check; empty when all do. Takes a record `check_record` accepted,
    as `canonical.parse_json` returned it."""
    problems = []
    for direction in ("inbound", "outbound"):
        for obs in record[direction]:
            found = observation_digest(obs)
            if found != obs["observation_digest"]:
                problems.append(
                    f"observation {obs['observation_id']} ({direction}): published {obs['observation_digest']}, "
                    f"re-computed {found}"
                )
    found = context_digest(record)
    if found != record["context_digest"]:
        problems.append(f"context_digest: published {record['context_digest']}, re-computed {found}")
    return problems


def verify_digests(record: dict[str, Any]) -> None:
    """Return None when every published digest re-checks (`record` as in `digest_mismatches`).

    Raises: IntegrityError naming each digest that does not re-check."""
    problems = digest_mismatches(record)
    if problems:
        raise IntegrityError(f"{len(problems)} digest(s) do not re-check: " + "; ".join(problems))
