# cython: freethreading_compatible = False
"""The compiled core: the node arena and the sys.monitoring recorder.

A Trace is a set of parallel columns, one row per node.  The Recorder receives
sys.monitoring events for the tracked thread and follows each code object's plan
(built by tracer.plan): at each event it replays the micro-ops of the segment that
just ran on the frame's shadow state and appends rows.  Values are read from the
frame's value stack through the _frame.c shim, only at slots the plan proves live.
"""

# One extension module, one concern per included file (the hot path stays one
# translation unit, so nothing gets slower).  Order: declarations before use.
include "_core/externs.pxi"
include "_core/layout.pxi"
include "_core/handed.pxi"
include "_core/values.pxi"
include "_core/timing.pxi"
include "_core/pages.pxi"
include "_core/arena.pxi"
include "_core/metadata.pxi"
include "_core/spare.pxi"
include "_core/graph.pxi"
include "_core/lint.pxi"
include "_core/scalars.pxi"
include "_core/tables.pxi"
include "_core/views.pxi"
include "_core/load.pxi"
include "_core/plans.pxi"
include "_core/plancheck.pxi"
include "_core/recorder.pxi"
include "_core/replay.pxi"
include "_core/records.pxi"
include "_core/interventions.pxi"
include "_core/filters.pxi"
include "_core/contexts.pxi"
include "_core/aftercall.pxi"
include "_core/compare312.pxi"
include "_core/resume.pxi"
include "_core/events.pxi"
include "_core/eventlog.pxi"
include "_core/callbacks.pxi"
