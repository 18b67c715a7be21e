"""issue 9 (generators): the finally run by generator.close is not recorded."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'closed'
#   3.13: trace-broken: complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'closed'

LOG = []

def accumulate():
    try:
        yield 1
    finally:
        LOG.append("closed")

def main():
    acc = accumulate()
    next(acc)
    acc.close()

ARGS = ()
