"""The ledger's schema version and the event row's columns, as plain names.

Every store operation needs these; only creating a ledger (and PostgreSQL's bulk copy, for column types)
needs the SQLModel tables themselves (`ledger.storage.tables`), which take longer to load than most commands take to
run: so this module imports nothing, and the tables are loaded where they are used.
"""

SCHEMA_VERSION = "3"  # 2: the paper index (index_nodes, index_roots) and observation_papers.seq; 3: payloads
# kept deflated against a fixed dictionary (`ledger.storage.payloads`)
UPGRADES_FROM = ("1", "2")  # the versions `ledger upgrade` brings to this one
EVENT_COLUMNS = ("seq", "kind", "subject", "paper", "effective_at", "effective_key", "recorded_at", "payload",
                 "entry_hash", "chain_hash")
