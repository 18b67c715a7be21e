"""issue 9 item 2: equal code objects taken for one; the second stays open."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: validate: GraphError: row 7: still open in a trace that finished normally [in validate, graph.py:128] at NestedCallNode <module> in eval
#   3.13: trace-broken: validate: GraphError: row 7: still open in a trace that finished normally [in validate, graph.py:128] at NestedCallNode <module> in eval

LOG = []

def main():
    return eval("1 + 1") + eval("1 + 1")

ARGS = ()
