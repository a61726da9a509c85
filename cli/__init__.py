"""The `ledger` command line: parses arguments, calls `ledger` and `projections`, renders results.

It never computes a fact itself. Errors become exit codes in one place: `cli.main.LedgerGroup`.
"""
