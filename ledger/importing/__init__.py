"""Importing: published records and event lines decoded, checked and appended all-or-nothing, and a log file
read back.
"""
