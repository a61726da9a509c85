"""The core: errors and their exit codes, the one canonical encoder, time as written and its ordering keys,
reading a user's input, worker processes. Bytes in, values or exceptions out; it imports nothing else of the
project.
"""
