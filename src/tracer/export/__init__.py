"""Looking at a trace: pictures (Graphviz DOT), networkx graphs, a summary table, the time
table of a timed trace and Chrome trace-event JSON (a timeline for Perfetto, speedscope).

Reads node views and the columns; nothing in `views/` imports this package."""
