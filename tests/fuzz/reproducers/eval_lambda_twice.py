"""issue 9 item 2: a lambda inside code evaluated twice stays open."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: validate: GraphError: row 19: still open in a trace that finished normally [in validate, graph.py:128] at NestedCallNode <lambda> in <module>; printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode <lambda> in <module>
#   3.13: trace-broken: validate: GraphError: row 19: still open in a trace that finished normally [in validate, graph.py:128] at NestedCallNode <lambda> in <module>; printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode <lambda> in <module>

LOG = []

def main():
    return [eval("(lambda p: p)(1)") for i in range(2)]

ARGS = ()
