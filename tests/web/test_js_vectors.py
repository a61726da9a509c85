"""The shared known-answer vectors (tests/vectors/) against the page's JavaScript, run under node.

tests/vectors/run.js loads web/assets/check.js, integrity.js and find.js as a browser would and prints its
answer to every case; each must be the case's `js_expect` where the file states one (with `js_why`: the page
answers otherwise on purpose) and its `expect` otherwise. Of an arXiv id the page reads the paper, not the
version. The page verifies no consistency proof, so rfc9162_consistency.json is Python's alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.ledger.test_vectors import REJECT, RULES, VECTORS, load, python_failures

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node") or "/usr/bin/node"
JS_RULES = tuple(rule for rule in RULES if rule != "rfc9162_consistency")

pytestmark = pytest.mark.skipif(not os.path.exists(NODE) and not os.environ.get("CI"), reason="needs node (>= 19)")


def js_answers(folder: Path) -> dict[str, list]:
    """The JavaScript's answer to every case of the files in `folder`, by rule."""
    done = subprocess.run([NODE, str(VECTORS / "run.js"), str(folder), str(ROOT / "web" / "assets")],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    return json.loads(done.stdout)


def js_expected(rule: str, case: dict):
    expected = case.get("js_expect", case["expect"])
    return {"paper": expected["paper"]} if rule == "arxiv_ids" and expected != REJECT else expected


def js_failures(folder: Path, answers: dict[str, list], rule: str) -> list[str]:
    """One line per case of `folder`/`rule`.json whose JavaScript answer is not the one expected of it."""
    cases = load(folder, rule)
    assert len(answers[rule]) == len(cases)
    return [f"{rule}: {case['name']!r}: expected {js_expected(rule, case)!r}, the JavaScript answers {found!r}"
            for case, found in zip(cases, answers[rule]) if found != js_expected(rule, case)]


def test_the_javascript_gives_every_known_answer():
    answers = js_answers(VECTORS)
    assert sorted(answers) == sorted(JS_RULES)
    assert [line for rule in JS_RULES for line in js_failures(VECTORS, answers, rule)] == []


def test_the_javascript_differs_only_where_a_case_says_why():
    differ = {rule: [case["name"] for case in load(VECTORS, rule) if "js_expect" in case] for rule in JS_RULES}
    for rule in RULES:
        for case in load(VECTORS, rule):
            assert ("js_expect" in case) == ("js_why" in case), case["name"]
            if "js_expect" in case:
                assert rule in JS_RULES and js_expected(rule, case) != js_expected(rule, {"expect": case["expect"]})
    assert differ == {
        "canonical": ["an integer beyond 64 bits", "an exponent, not canonical", "negative zero", "a trailing zero",
                      "a number literal beyond a double", "a lone surrogate"],
        "signed_notes": ["a checkpoint of another origin", "a size of 17 digits",
                         "a malformed line before the signature"],
        "cosignatures": ["a line of the witness's name that is not base64"], "rfc9162_inclusion": [],
        "paper_index": ["an absent paper, ending at a neighbour"],
        "arxiv_ids": ["https://arxiv.org/abs/2407.20018", "arxiv.org/pdf/2407.20018v2.pdf",
                      "http://export.arxiv.org/abs/hep-th/9901001"]}


def test_a_mutated_vector_fails_in_python_and_in_the_javascript(tmp_path):
    shutil.copytree(VECTORS, tmp_path, dirs_exist_ok=True)
    mutated = {}
    for rule in RULES:  # one expected answer flipped per file: a refusal made a value in one, values refused
        cases = load(tmp_path, rule)
        if rule == "canonical":
            case = next(c for c in cases if c["expect"] == REJECT and "js_expect" not in c)
            case["expect"] = next(c for c in cases if c["expect"] != REJECT)["expect"]
        else:
            case = next(c for c in cases if c["expect"] != REJECT and "js_expect" not in c)
            case["expect"] = REJECT
        mutated[rule] = case["name"]
        (tmp_path / f"{rule}.json").write_text(json.dumps(cases, indent=1))
    answers = js_answers(tmp_path)
    for rule in RULES:
        python = python_failures(tmp_path, rule)
        assert len(python) == 1 and python[0].startswith(f"{rule}: {mutated[rule]!r}: expected "), python
        if rule in JS_RULES:
            js = js_failures(tmp_path, answers, rule)
            assert len(js) == 1 and js[0].startswith(f"{rule}: {mutated[rule]!r}: expected "), js
