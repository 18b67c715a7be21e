"""control: generator.send (passes today)."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: ok
#   3.13: ok

LOG = []

def accumulate():
    while True:
        got = yield 1
        LOG.append(got)

def main():
    acc = accumulate()
    next(acc)
    return acc.send(5)

ARGS = ()
