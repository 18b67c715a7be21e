"""control: a plain generator consumed by list() (passes today)."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: ok
#   3.13: ok

LOG = []

def produce():
    yield 1
    yield 2

def main():
    return list(produce())

ARGS = ()
