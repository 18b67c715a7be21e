"""issue 9 (generators): the handler run by generator.throw is not recorded."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'thrown'
#   3.13: trace-broken: complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'thrown'

LOG = []

def accumulate():
    while True:
        try:
            yield 1
        except ValueError:
            LOG.append("thrown")

def main():
    acc = accumulate()
    next(acc)
    return acc.throw(ValueError())

ARGS = ()
