"""The log's structures: entry bytes and the blake3 chain, the RFC 9162 tree and its proofs, C2SP signed notes
and tiles, the paper index. Pure: they are handed entries; they never open a database.
"""
