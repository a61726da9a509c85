"""Importing: published records and event lines decoded, checked and appended all-or-nothing, and a log file
read back.

`importer` holds the entry points (`import_files`, `import_inputs`, `parse_input`); behind it, one module a
job: `units` cuts inputs into units, `decode` turns an input or a unit into a `Parsed`, `wire` is what crosses
to worker processes and back, `transaction` is the attempts and the append. `logfile` reads an exported log.
"""
