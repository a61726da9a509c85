"""The offline audit: verifiers of inclusion proofs, checkpoints and evidence bundles that an auditor can vendor.
It never reaches the store, even indirectly (`tests/test_layers.py`).
"""
