"""`python tests/corpus` (or `python -m corpus` from tests/): check every case runs
and gives the same outcome twice, untraced."""

from corpus import self_check

self_check()
