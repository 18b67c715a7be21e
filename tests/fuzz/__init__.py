"""Generated-program differential fuzzer for tracer (issue 9).

A seeded grammar writes small Python modules whose entry point `main(*ARGS)` returns a
value and appends to a module-level list `LOG`; each program runs in a subprocess
untraced, then under `tracer.track`, and the two runs must agree on the result, the
log and the exception raised.  Every trace must also pass `tracer.validate` and
`tracer.printlevels`.

Modules: `constructs` (the names that can be switched on and off), `source` (line
writer and name allocation), `expressions` and `statements` (the grammar),
`blocks_*` (one emitter per construct), `program` (a whole module from a seed),
`child` (the subprocess side), `runner` (batches, crash attribution,
classification), `report` (counts and failure classes), `cli` (`scripts/fuzz`).
"""
