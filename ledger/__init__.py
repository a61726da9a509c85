"""ledger: an event-sourced, hash-chained system of record behind Paper Citation Records.

The core package: canonical encoding, digests, events, the chain, the store and import.
Bytes in, values or exceptions out. It never prints and never exits the process.
"""

SCHEMA = "pith.paper-citation-record.v1"
