"""The model: the published record's format (shapes, digests), the standing-notice vocabulary, and the events a
record is taken apart into, with their kinds. Pure: no storage, no printing.
"""
