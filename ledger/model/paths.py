"""The site's paths, spelled once: the patterns a record's `links` and every route of the site are formatted
from (`ledger.web.routes` is the table that serves, publishes and links them). Pure strings and one
formatter: nothing here checks an id (`ledger.model.arxiv.paper_id` does, before an id reaches a URL or a file)
or knows how a path is served or written.

A pattern is the path of a page's HTML form, or of its only form; its JSON form is the same path with `.json`
appended. `{name}` is a parameter; those in SLASHED may span several segments (an old-style arXiv id such as
`hep-th/9901001`, a tile path, a month such as `hep-th/9901`).
"""

from __future__ import annotations

INDEX = "/"
EVIDENCE = "/evidence"
NOT_FOUND = "/404.html"  # what a static host serves for a path the site does not have
ASSET = "/assets/{name}"
CHECKPOINT = "/checkpoint"
PAPER_INDEX = "/paper-index/{size}"  # the paper index note of tree `size`: what an auditing witness compares
TILE = "/tile/{rest}"  # C2SP tlog-tiles: rest is <L>/<N>[.p/<W>] or entries/<N>[.p/<W>]
MONTH = "/papers/{month}"  # the papers of one month, as arXiv lists them: 2407, hep-th/9901
PAPER = "/paper/{paper}"
RECORD = "/paper/{paper}/citation-record"
DAY_RECORD = "/paper/{paper}/as-of/{day}/citation-record"  # the record as of the end of that UTC day
DAY_CHANGES = "/paper/{paper}/as-of/{day}/changes"  # what changed in the record on that UTC day
INTEGRITY = "/paper/{paper}/integrity"
HISTORY = "/paper/{paper}/history"  # JSON only
DIFF = "/paper/{paper}/diff"  # JSON only
JSON = ".json"
SLASHED = ("paper", "rest", "month")


def fill(pattern: str, json: bool = False, **params: object) -> str:
    """The path `pattern` names for `params` (formatted as given: the caller checks them), or with `json`
    the path of its JSON form."""
    path = pattern.format(**params)
    return path + JSON if json else path
