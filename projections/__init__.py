"""Projections: pure folds from events to a published record and its JSON and text forms.

Nothing here touches a database; the caller hands in the events.
"""
