"""Services that combine the store and the folds: replaying records as of a date, verifying a record against
the ledger, proofs from the store, and the log written as tiles.
"""
