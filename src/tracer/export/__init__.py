"""Looking at a trace: pictures (Graphviz DOT), networkx graphs and a summary table.

Reads node views and the columns; nothing in `views/` imports this package."""
