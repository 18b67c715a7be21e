"""Corpus: Methods of builtin types."""


from .common import Case


def word_frequencies(text):
    counts = {}
    for raw in text.split():
        word = raw.strip(".,;:!?\"'").lower()
        if word:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]


def list_method_tour(seed):
    xs = list(seed)
    xs.append(1)
    xs.extend([9, 2])
    xs.insert(0, 7)
    popped = xs.pop()
    popped_front = xs.pop(0)
    xs.remove(9)
    position = xs.index(1)
    occurrences = xs.count(3)
    xs.reverse()
    ordered = xs.copy()
    ordered.sort(reverse=True)
    cleared = ordered[:]
    cleared.clear()
    return xs, ordered, cleared, popped, popped_front, position, occurrences


def dict_method_tour(pairs):
    d = dict(pairs)
    d.setdefault("z", 26)
    d.setdefault("a", -1)
    d.update(y=25, x=24)
    removed = d.pop("a", None)
    missing = d.pop("nope", "default")
    keys = sorted(d.keys())
    values = sorted(d.values())
    last = d.popitem()
    merged = d | {"m": 13}
    d |= {"n": 14}
    fromkeys = dict.fromkeys("abc", 0)
    return d, removed, missing, keys, values, last, merged, fromkeys, d.get("q"), d.get("n", 0)


def set_operations(a, b):
    sa, sb = set(a), set(b)
    sa.add(100)
    sa.discard(-1)
    sb.update({7, 8})
    return (sa | sb, sa & sb, sa - sb, sa ^ sb, sa <= (sa | sb), frozenset(sb).isdisjoint({0}),
            sorted(sa.union(sb)), {x % 3 for x in sa})


def string_method_tour(s):
    return {
        "upper": s.upper(), "title": s.title(), "words": s.split(), "csv": ",".join(s.split()),
        "replace": s.replace("o", "0"), "find": s.find("o"), "rfind": s.rfind("o"),
        "count": s.count("o"), "startswith": s.startswith("Th"), "endswith": s.endswith(("g", "x")),
        "partition": s.partition(" "), "rsplit": s.rsplit(" ", 1), "center": s.center(30, "*"),
        "zfill": "42".zfill(6), "strip": f"  {s}  ".strip(), "isdigit": [w.isdigit() for w in s.split()],
        "swap": s.swapcase(), "encoded": s.encode()[:5], "ljust": s[:4].ljust(6, "."),
        "translate": s.translate(str.maketrans("aeiou", "AEIOU")),
    }


def parse_key_value_config(text):
    config = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {line_no}: missing '='")
        key = key.strip().lower()
        value = value.strip()
        if value.isdigit():
            value = int(value)
        elif value.lower() in ("true", "false"):
            value = value.lower() == "true"
        config[key] = value
    return config


def bytes_checksum(payload):
    buf = bytearray(payload.encode("utf-8"))
    for i in range(len(buf)):
        buf[i] ^= 0x5A
    checksum = 0
    for byte in buf:
        checksum = (checksum * 31 + byte) & 0xFFFFFFFF
    return bytes(buf[:6]), checksum, buf.hex()[:12]


CASES = [
    Case("word_frequencies", word_frequencies,
         ("It was the best of times, it was the worst of times; it was the age of wisdom.",)),
    Case("list_method_tour", list_method_tour, ((5, 3, 8, 3),)),
    Case("dict_method_tour", dict_method_tour, ((("a", 1), ("b", 2), ("c", 3)),)),
    Case("set_operations", set_operations, ([1, 2, 3, 4, -1], [3, 4, 5])),
    Case("string_method_tour", string_method_tour, ("The rain in Spain stays 42 on the plain log",)),
    Case("parse_key_value_config", parse_key_value_config,
         ("# settings\nName = demo\nRetries=3\n\nverbose = TRUE  # inline\npath=/tmp/x\n",)),
    Case("bytes_checksum", bytes_checksum, ("héllo wörld",)),
    Case("raises_value_error_bad_config", parse_key_value_config, ("a = 1\nbroken line\n",), raises=ValueError),
]
