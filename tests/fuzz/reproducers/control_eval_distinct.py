"""control: two different strings evaluated once each (passes today)."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: ok
#   3.13: ok

LOG = []

def main():
    return eval("1 + 1") + eval("2 + 2")

ARGS = ()
