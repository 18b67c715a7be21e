"""Corpus: Attributes, subscripts, slices, del; Packing and unpacking."""


from .common import Case


def slice_operations(seed):
    xs = list(seed)
    head, tail, every_other, backwards = xs[:3], xs[-3:], xs[::2], xs[::-1]
    middle = xs[2:-2]
    xs[1:3] = ["a", "b", "c"]
    xs[::3] = [None] * len(xs[::3])
    del xs[0]
    del xs[-2:]
    text = "abcdefghij"
    return head, tail, every_other, backwards, middle, xs, text[2:8:2], text[::-2], text[slice(1, 4)]


def subscript_get_set_delete(pairs):
    table = {}
    for k, v in pairs:
        table[k] = v
    table[("tuple", 1)] = "tuple key"
    nested = {"a": {"b": [1, 2, {"c": 3}]}}
    nested["a"]["b"][2]["c"] += 1
    nested["a"]["b"][0] = table[pairs[0][0]]
    del table[pairs[-1][0]]
    matrix = [[1, 2], [3, 4]]
    matrix[1][0], matrix[0][1] = matrix[0][1], matrix[1][0]
    return sorted(table.items(), key=repr), nested, matrix, "xyz"[1], (1, 2, 3)[-1]


def del_statements(values):
    data = list(values)
    mapping = dict(enumerate(values))
    temp = data[0] * 2
    del temp
    try:
        temp  # noqa: B018 - reading a deleted local on purpose
        status = "still bound"
    except UnboundLocalError:
        status = "unbound"
    del data[1], mapping[0]
    del data[-2:]
    a = b = 5
    del a
    assert len(data) >= 1, "need at least one element"
    assert b == 5
    return data, mapping, status


def attribute_read_write():
    class Config:
        retries = 3

    cfg = Config()
    cfg.timeout = 1.5
    cfg.retries = cfg.retries + 2
    cfg.name = "svc"
    setattr(cfg, "verbose", True)
    del cfg.name
    Config.retries = 10
    other = Config()
    return (cfg.retries, other.retries, cfg.timeout, getattr(cfg, "name", "gone"), cfg.verbose,
            sorted(vars(cfg)), hasattr(other, "timeout"))


def unpacking_variety(seq):
    first, *middle, last = seq
    head, *tail = seq
    *init, end = seq
    (a, b), [c, d] = seq[:2], seq[2:4]
    ((p, q), r) = ((seq[0], seq[1]), seq[2])
    x, y = 1, 2
    x, y = y, x
    i, j, k = "ijk"
    for index, (left, right) in enumerate(zip(seq, seq[1:])):
        if index == 1:
            break
    return first, middle, last, head, tail, init, end, a, b, c, d, p, q, r, x, y, i + j + k, left, right


def literal_splats(xs, extra):
    combined_list = [*xs, *extra, 0]
    combined_tuple = (*xs, "sep", *reversed(extra))
    combined_set = {*xs, *extra}
    base = {"a": 1, "b": 2}
    override = {"b": 20, "c": 30}
    merged = {**base, **override, "d": 4}
    merged_again = {"z": 0, **merged}
    single = 1,
    empty = ()
    return combined_list, combined_tuple, combined_set, merged, merged_again, single, empty, [*"hi"]


def swap_and_rotate(values):
    a, b, c = values
    a, b = b, a
    a, b, c = c, a, b
    pairs = [(i, v) for i, v in enumerate(values)]
    swapped = [(v, i) for i, v in pairs]
    (m, n), o = swapped[:2], swapped[2]
    return a, b, c, swapped, m, n, o


CASES = [
    Case("slice_operations", slice_operations, (range(10),)),
    Case("subscript_get_set_delete", subscript_get_set_delete, ((("x", 1), ("y", 2), ("z", 3)),)),
    Case("del_statements", del_statements, ((10, 20, 30, 40, 50, 60),)),
    Case("attribute_read_write", attribute_read_write),
    Case("unpacking_variety", unpacking_variety, ((1, 2, 3, 4, 5, 6),)),
    Case("literal_splats", literal_splats, ((1, 2, 3), [3, 4])),
    Case("swap_and_rotate", swap_and_rotate, (("x", "y", "z"),)),
]
