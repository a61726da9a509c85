"""The static site against the number of days its papers change on (issue 45): `ledger publish` of a corpus
whose papers gain their inbound citations one day at a time, the site's bytes by kind of file, the site against
the record JSON it publishes, and the bytes per paper against its number of change days.

    .venv/bin/python -m benchmarks.site_days                      # the held-out shape: 600 papers, 21 change days
    .venv/bin/python -m benchmarks.site_days --papers 60 --mix 5  # smaller and quicker

The corpus (built here, deterministic): each paper has a snapshot and 5 outbound references on its first day,
then 20 inbound citations, each observed and resolved on a day of its own (21 change days), with titles of a
realistic length and one standing-notice sweep on its last day. `--mix N` adds N papers of each of the
shapes in MIX, whose 20 inbound citations fall on fewer days, or whose resolutions change on later days, so that
the table of bytes per paper covers 1 to 101 change days with the same 25 observations.
"""
