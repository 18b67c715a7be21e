"""object lifetime: the trace keeps recorded values alive, so __del__ runs after main."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: mismatch: outcome untraced {'returned': '1'} != traced {'returned': '0'}; LOG untraced ['deleted'] != traced []
#   3.13: mismatch: outcome untraced {'returned': '1'} != traced {'returned': '0'}; LOG untraced ['deleted'] != traced []

LOG = []

class Thing:
    def __del__(self):
        LOG.append("deleted")

def main():
    thing = Thing()
    del thing
    return len(LOG)

ARGS = ()
