"""How a choice got its value: the kinds of Choice.kind."""

SAMPLED = "sampled"        # drawn by the program
REPLAYED = "replayed"      # value given (replay, update): a choice like any other
OBSERVED = "observed"      # value given by condition: an observation, scored
INTERVENED = "intervened"  # value given by do: not a random choice, not scored
