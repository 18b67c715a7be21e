"""Values as data: a table of encoded objects that loads without running any code.

Every distinct object (by identity) a trace holds is one entry, so two nodes that
held the same object hold the same decoded object again (`return %k`'s value *is*
%k's, as validate checks).  Encoded losslessly: None, bool, int, float, complex,
str, bytes, slices, Ellipsis, numpy scalars and arrays (no object dtype), and tuples,
lists, dicts, sets and frozensets of those (their items are entries too, so identity inside
containers survives).  Anything else is its bounded display text plus its type's
name (and a callable's qualified name, `tracer.views.names`), decoded as an `Opaque`
stand-in that prints and is named as the original was; a callable of a module
already imported when loading (math.sin, numpy.sqrt: found by name and type, never
imported) decodes as itself.  With ``values="pickle"`` each value is pickled instead
(an explicit opt-in: unpickling runs code from the file, so decoding it needs
``allow_pickle=True``).
"""

from __future__ import annotations

import dataclasses
import io
import operator
import pickle
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._core import scalar_columns
from ..views.names import callable_name, find_callable
from ..views.values import SavedText, short_value

__all__ = ["ValueTable", "encode_values", "decode_values", "Opaque", "OpaqueException",
           "PickleRefused"]

# Entry tags (a column of the value table).
T_NONE, T_FALSE, T_TRUE, T_INT, T_BIGINT, T_FLOAT, T_COMPLEX, T_STR, T_BYTES = range(9)
T_NP_SCALAR, T_NP_ARRAY, T_TUPLE, T_LIST, T_DICT, T_SET, T_FROZENSET, T_OPAQUE = range(9, 17)
T_OPAQUE_EXCEPTION, T_PICKLE, T_SLICE, T_ELLIPSIS = 17, 18, 19, 20
TAG_NAMES = ("none", "false", "true", "int", "bigint", "float", "complex", "str", "bytes",
             "np_scalar", "np_array", "tuple", "list", "dict", "set", "frozenset", "opaque",
             "opaque_exception", "pickle", "slice", "ellipsis")

# Containers longer than this are stored as their display text: a trace's values
# are mostly small, and a huge list repeated at many nodes would swamp the file.
MAX_ITEMS = 10_000
# An opaque value's repr keeps this many characters at each end.
REPR_END = 1000
# Containers nested deeper than this are stored as text (encoding recurses).
MAX_DEPTH = 64
_INT64 = (-(1 << 63), (1 << 63) - 1)
_CONTAINERS = {tuple: T_TUPLE, list: T_LIST, dict: T_DICT, set: T_SET, frozenset: T_FROZENSET}


class PickleRefused(ValueError):
    """A file or payload holds pickled values and `allow_pickle` was not given."""


@dataclass
class ValueTable:
    """The encoded values, one entry per distinct object, as parallel columns.

    `items[i]` lists the entries a container's items are (a dict: keys and values
    alternating; a complex number: its real and imaginary parts as floats)."""

    # tag, integer, real: numpy arrays as encode_values makes them, lists as read.
    tag: list[int] | np.ndarray = field(default_factory=list)
    integer: list[int] | np.ndarray = field(default_factory=list)
    real: list[float] | np.ndarray = field(default_factory=list)
    text: list[str | None] = field(default_factory=list)      # str, big int, display text
    blob: list[bytes | None] = field(default_factory=list)    # bytes, numpy data, pickles
    type_name: list[str | None] = field(default_factory=list)  # module.qualname / numpy dtype
    repr_text: list[str | None] = field(default_factory=list)  # an opaque value's repr, bounded
    items: list[list[int] | None] = field(default_factory=list)
    name: list[str | None] = field(default_factory=list)       # a callable's qualified name
    # The mostly-empty columns as the encoder held them, {entry: item} by column name
    # (None when read from a file): a file's columns are built from these without a
    # pass over the None of every entry.
    sparse: dict[str, dict] | None = field(default=None, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.tag)

    @property
    def pickled(self) -> bool:
        return T_PICKLE in self.tag


_SPARSE = ("text", "blob", "type_name", "repr_text", "items", "name")


class SparseColumn(Sequence):
    """A value-table column that is mostly None, as the encoder holds it ({entry:
    item}): indexed and iterated as the list of an item or None per entry, without
    making that list (a saved file's columns are built from the dict)."""

    __slots__ = ("n", "items")

    def __init__(self, n: int, items: dict):
        self.n, self.items = n, items

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"entry {i} of {self.n}")
        return self.items.get(i)

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, SparseColumn)) else NotImplemented

    def __reduce__(self):   # pickled as the plain list a file would give back
        return list, (list(self),)


class _Encoder:
    # tag, integer and real get an item per entry; the other columns are mostly
    # empty, so they are dicts (entry -> item), read through SparseColumn.
    def __init__(self, use_pickle: bool):
        self.tag: list[int] = []
        self.integer: list[int] = []
        self.real: list[float] = []
        self.text: dict = {}
        self.blob: dict = {}
        self.type_name: dict = {}
        self.repr_text: dict = {}
        self.items: dict = {}
        self.name: dict = {}
        self.index: dict[int, int] = {}
        self.keep: list = []  # the objects encoded, alive until done (ids stay unique)
        self.use_pickle = use_pickle
        self.depth = 0

    def table(self, extra: int = 0) -> ValueTable:
        """The table of the entries so far, its sparse columns sized for `extra` more
        (read as lists of an item or None per entry; laid out only when read so)."""
        n = len(self.tag) + extra
        columns = {name: SparseColumn(n, getattr(self, name)) for name in _SPARSE}
        return ValueTable(tag=self.tag, integer=self.integer, real=self.real, **columns,
                          sparse={name: getattr(self, name) for name in _SPARSE})


    def add(self, obj) -> int:
        i = self.index.get(id(obj))
        if i is not None:
            return i
        i = len(self.tag)
        self.index[id(obj)] = i
        self.keep.append(obj)
        self.tag.append(T_NONE)
        self.integer.append(0)
        self.real.append(0.0)
        if self.use_pickle and obj is not None:
            try:
                self.blob[i] = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
                self.tag[i] = T_PICKLE
                return i
            except Exception:  # unpicklable: encoded as below
                pass
        self._fill(i, obj)
        return i

    def _fill(self, i: int, obj) -> None:
        t = self
        cls = type(obj)
        if obj is None:
            return
        if cls is bool:
            t.tag[i] = T_TRUE if obj else T_FALSE
        elif cls is int:
            if _INT64[0] <= obj <= _INT64[1]:
                t.tag[i], t.integer[i] = T_INT, obj
            else:
                # Two's complement bytes: exact at any size (str() refuses beyond
                # sys.get_int_max_str_digits(), 4300 digits by default).
                t.tag[i], t.blob[i] = T_BIGINT, obj.to_bytes(obj.bit_length() // 8 + 1,
                                                             "little", signed=True)
        elif cls is float:
            t.tag[i], t.real[i] = T_FLOAT, obj
        elif cls is complex:
            t.tag[i] = T_COMPLEX
            t.items[i] = [self.add(obj.real), self.add(obj.imag)]
        elif cls is str:
            t.tag[i], t.text[i] = T_STR, obj
        elif cls is bytes:
            t.tag[i], t.blob[i] = T_BYTES, obj
        elif cls is slice:      # an index: a loaded tape indexes with it again
            t.tag[i] = T_SLICE
            t.items[i] = [self.add(obj.start), self.add(obj.stop), self.add(obj.step)]
        elif obj is Ellipsis:
            t.tag[i] = T_ELLIPSIS
        elif isinstance(obj, np.generic) and obj.dtype.kind not in "OV":
            t.tag[i], t.type_name[i], t.blob[i] = T_NP_SCALAR, obj.dtype.str, obj.tobytes()
        elif cls is np.ndarray and not obj.dtype.hasobject:
            buf = io.BytesIO()
            np.save(buf, obj, allow_pickle=False)
            t.tag[i], t.blob[i] = T_NP_ARRAY, buf.getvalue()
        elif (cls in _CONTAINERS and len(obj) <= MAX_ITEMS and self.depth < MAX_DEPTH
              and (cls not in (set, frozenset, dict) or all(_plain(x) for x in obj))):
            t.tag[i] = _CONTAINERS[cls]
            self.depth += 1
            try:
                if cls is dict:
                    t.items[i] = [j for k, v in obj.items() for j in (self.add(k), self.add(v))]
                else:
                    t.items[i] = [self.add(x) for x in obj]
            finally:
                self.depth -= 1
        else:
            self._opaque(i, obj)

    def _opaque(self, i: int, obj) -> None:
        t = self
        cls = type(obj)
        t.tag[i] = T_OPAQUE_EXCEPTION if isinstance(obj, BaseException) else T_OPAQUE
        t.type_name[i] = f"{cls.__module__}.{cls.__qualname__}"
        try:
            t.text[i] = short_value(obj)
            t.repr_text[i] = _bounded(repr(obj))
        except Exception as exc:  # a repr that raises: say so instead
            t.text[i] = t.repr_text[i] = (f"<{cls.__qualname__} object (repr raised "
                                          f"{type(exc).__name__})>")
        if callable(obj) and not isinstance(obj, BaseException):
            # Its name as the live trace's table names it: a loaded trace's callee
            # column, queries and summary read the same names.
            try:
                t.name[i] = callable_name(obj)
            except Exception:  # a name lookup that raises (a broken __getattr__)
                t.name[i] = t.text[i]


def _bounded(text: str) -> str:
    # Both ends kept: a dump shortens a repr to its start and end (reprlib), so a
    # container holding this value prints as the live one did.
    if len(text) <= 2 * REPR_END:
        return text
    return text[:REPR_END] + "..." + text[-REPR_END:]


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _plain(obj, depth: int = 0) -> bool:
    """Whether `obj` decodes as an equal object of the same type.  Sets and dict keys
    must be such items: items kept as text hash (so iterate) differently, and do not
    sort as a dump sorts set items; such sets and dicts are kept as text."""
    cls = type(obj)
    if cls in _PLAIN or (isinstance(obj, np.generic) and obj.dtype.kind not in "OV"):
        return True
    if cls in (tuple, frozenset) and depth < 8 and len(obj) <= MAX_ITEMS:
        return all(_plain(x, depth + 1) for x in obj)
    return False


def encode_values(objects: list, use_pickle: bool = False) -> tuple[ValueTable, np.ndarray]:
    """Encode `objects` (a list); return the table and each object's entry (an int64
    array, one per object).  The table's tag, integer and real columns are numpy
    arrays here (lists when read from a file)."""
    enc = _Encoder(use_pickle)
    n = len(objects)
    if use_pickle:
        entries = np.fromiter(map(enc.add, objects), dtype=np.int64, count=n)
        return enc.table(), entries
    # Plain scalars (float, int, bool, None: most of a numeric trace's values) are
    # encoded in bulk: the core reads each object's address, type and number into
    # columns and numbers the distinct objects, and numpy fills the table from those.
    # A loop in Python over 10^6 values was most of the time of a save.
    address, kind, real, integer, big, group, firsts = scalar_columns(objects)
    plain = np.isin(kind[firsts], _PLAIN_TYPE_IDS) & ~big[firsts]  # per distinct object
    entry = np.full(len(firsts), -1, dtype=np.int64)
    # The others first, one by one: containers enter their items (maybe plain values
    # nodes also hold) into the encoder's index, which the plain ones then join.
    other = np.flatnonzero(~plain)
    if len(other):
        entry[other] = np.fromiter(map(enc.add, _pick(objects, firsts[other])),
                                   dtype=np.int64, count=len(other))
    at = np.flatnonzero(plain)
    if enc.index and len(at):
        known = np.fromiter(enc.index.keys(), dtype=np.int64, count=len(enc.index))
        known_entry = np.fromiter(enc.index.values(), dtype=np.int64, count=len(known))
        order = np.argsort(known)
        known = known[order]
        wanted = address[firsts[at]]
        pos = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
        hit = known[pos] == wanted
        entry[at[hit]] = known_entry[order[pos[hit]]]
        at = at[~hit]
    entry[at] = len(enc.tag) + np.arange(len(at))
    rows = firsts[at]  # where each new entry's object is
    kinds = kind[rows]
    tag = np.full(len(rows), T_NONE, dtype=np.uint8)
    tag[kinds == id(float)] = T_FLOAT
    ints = kinds == id(int)
    tag[ints] = T_INT
    bools = kinds == id(bool)
    tag[bools] = np.where(integer[rows][bools] != 0, T_TRUE, T_FALSE)
    table = enc.table(extra=len(rows))
    table.tag = np.concatenate((np.asarray(enc.tag, dtype=np.uint8), tag))
    table.integer = np.concatenate((np.asarray(enc.integer, dtype=np.int64),
                                    np.where(ints, integer[rows], 0)))
    table.real = np.concatenate((np.asarray(enc.real, dtype=np.float64), real[rows]))
    return table, entry[group]


_PLAIN_TYPE_IDS = np.array([id(float), id(int), id(bool), id(type(None))], dtype=np.int64)


def _pick(objects: list, at: np.ndarray) -> list:
    """`[objects[i] for i in at]`, gathered in C."""
    if len(at) <= 1:
        return [objects[int(i)] for i in at]
    return list(operator.itemgetter(*at.tolist())(objects))


class Opaque(SavedText):
    """A value a saved trace kept only as text: its type's name, its display text
    (`text`, as a dump shows it), its repr (`repr_text`, both ends kept if long) and,
    for a callable, its qualified name (`name`, else None).

    Each original type gets a subclass of its own name, so a dump of the loaded
    trace reads `text::TypeName` as the live one did.  Two stand-ins of the same
    saved value compare equal (two loads of one file); asking one for an attribute
    or calling it says that it is a stand-in."""

    __slots__ = ("type_name", "text", "repr_text", "name")

    def __init__(self, type_name: str, text: str, repr_text: str, name: str | None = None):
        self.type_name = type_name
        self.text = text
        self.repr_text = repr_text
        self.name = name

    def __repr__(self) -> str:
        return self.repr_text

    def __getattr__(self, attr: str):
        # Only reached for attributes the stand-in lacks (slots are found first).
        raise AttributeError(f"loaded stand-in for {_what(self)}: attributes were not saved "
                             f"(no {attr!r}); save with values='pickle' to keep whole objects")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return _key(self) == _key(other)

    def __hash__(self):
        return hash(_key(self))


def _key(stand_in) -> tuple:
    return stand_in.type_name, stand_in.text, stand_in.repr_text, stand_in.name


def _what(stand_in) -> str:
    """What a stand-in stands for, in an error: a callable by name, else its type."""
    return stand_in.name or stand_in.type_name.removeprefix("builtins.")


def _refuse_call(self, /, *args, **kwargs):
    raise TypeError(f"loaded stand-in for {_what(self)}: it cannot be called (a saved "
                    "trace keeps a callable's name, not the callable)")


class OpaqueException(SavedText, Exception):
    """An exception a saved trace kept only as text (a raising node's value)."""

    def __init__(self, type_name: str, text: str, repr_text: str):
        super().__init__(text)
        self.type_name = type_name
        self.text = text
        self.repr_text = repr_text

    def __repr__(self) -> str:
        return self.repr_text

    @property
    def name(self) -> None:
        return None


_stand_in_types: dict[tuple[str, bool, bool], type] = {}


def _stand_in(type_name: str, exception: bool, is_callable: bool = False) -> type:
    key = (type_name, exception, is_callable)
    cls = _stand_in_types.get(key)
    if cls is None:
        module, _, qualname = type_name.rpartition(".")
        base = OpaqueException if exception else Opaque
        name = qualname.rpartition(".")[2] or base.__name__
        body = {"__module__": module, "__qualname__": qualname or base.__name__,
                "__slots__": ()}
        if exception:
            del body["__slots__"]
        if is_callable:
            body["__call__"] = _refuse_call
        cls = type(name, (base,), body)
        _stand_in_types[key] = cls
    return cls


def decode_values(table: ValueTable, allow_pickle: bool = False) -> list:
    """The objects of `table`, in entry order.  Never runs code from the table
    unless `allow_pickle` (then pickled entries are unpickled, with a warning)."""
    if isinstance(table.tag, np.ndarray):  # encoded here (or pickled): lists of numbers
        table = dataclasses.replace(table, tag=table.tag.tolist(),
                                    integer=np.asarray(table.integer).tolist(),
                                    real=np.asarray(table.real).tolist())
    tags = table.tag
    if T_PICKLE in tags:
        if not allow_pickle:
            raise PickleRefused(
                "these values were saved with values='pickle': loading them unpickles data "
                "from the file, which can run any code; pass allow_pickle=True only for a "
                "file you trust")
        warnings.warn("unpickling the values of a trace saved with values='pickle'",
                      stacklevel=3)
    names = table.name  # empty for files saved before names were
    out: list = [None] * len(tags)
    done = [False] * len(tags)
    active: set[int] = set()

    def get(i: int):
        if not 0 <= i < len(tags):
            raise ValueError(f"value entry {i} does not exist (the table has {len(tags)})")
        if done[i]:
            return out[i]
        if i in active:  # a cycle through an immutable container: no value yet
            raise ValueError(f"value entry {i} contains itself through a tuple")
        active.add(i)
        out[i] = _decode_one(i)
        done[i] = True
        active.discard(i)
        return out[i]

    def _decode_one(i: int):
        tag = tags[i]
        if tag == T_NONE:
            return None
        if tag in (T_FALSE, T_TRUE):
            return tag == T_TRUE
        if tag == T_INT:
            return int(table.integer[i])
        if tag == T_BIGINT:
            blob = table.blob[i]
            if blob is None:  # written before ints were kept as bytes: decimal text
                return int(table.text[i])
            return int.from_bytes(blob, "little", signed=True)
        if tag == T_FLOAT:
            return float(table.real[i])
        if tag == T_COMPLEX:
            re, im = table.items[i]
            return complex(get(re), get(im))
        if tag == T_STR:
            return table.text[i]
        if tag == T_BYTES:
            return bytes(table.blob[i])
        if tag == T_NP_SCALAR:
            return np.frombuffer(table.blob[i], dtype=np.dtype(table.type_name[i]))[0]
        if tag == T_NP_ARRAY:
            return np.load(io.BytesIO(table.blob[i]), allow_pickle=False)
        if tag in (T_LIST, T_DICT, T_SET):
            # Mutable: made empty first, so a container that holds itself decodes.
            made = {T_LIST: list, T_DICT: dict, T_SET: set}[tag]()
            out[i], done[i] = made, True
            items = [get(j) for j in table.items[i]]
            if tag == T_LIST:
                made.extend(items)
            elif tag == T_DICT:
                made.update(zip(items[0::2], items[1::2]))
            else:
                made.update(items)
            return made
        if tag == T_TUPLE:
            return tuple(get(j) for j in table.items[i])
        if tag == T_SLICE:
            start, stop, step = table.items[i]
            return slice(get(start), get(stop), get(step))
        if tag == T_ELLIPSIS:
            return Ellipsis
        if tag == T_FROZENSET:
            return frozenset(get(j) for j in table.items[i])
        if tag == T_OPAQUE_EXCEPTION:
            cls = _stand_in(table.type_name[i] or "builtins.Exception", True)
            return cls(table.type_name[i], table.text[i] or "",
                       table.repr_text[i] or table.text[i] or "")
        if tag == T_OPAQUE:
            name = names[i] if i < len(names) else None
            if name is not None:
                # A function of a module already imported (math.sin, numpy.sqrt) is
                # that function again: a loaded tape calls it, backprop finds its rule.
                found = find_callable(name, table.type_name[i])
                if found is not None:
                    return found
            cls = _stand_in(table.type_name[i] or "builtins.object", False, name is not None)
            return cls(table.type_name[i], table.text[i] or "",
                       table.repr_text[i] or table.text[i] or "", name)
        if tag == T_PICKLE:
            return pickle.loads(table.blob[i])  # allow_pickle was checked above
        raise ValueError(f"value entry {i}: unknown tag {tag}")

    # Scalars straight from their columns; the rest (containers, text) one by one.
    tag_array = np.asarray(tags, dtype=np.uint8)
    for t, source in ((T_FLOAT, table.real), (T_INT, table.integer), (T_STR, table.text)):
        for i in np.flatnonzero(tag_array == t).tolist():
            out[i] = source[i]
            done[i] = True
    for t, value in ((T_TRUE, True), (T_FALSE, False), (T_NONE, None)):
        for i in np.flatnonzero(tag_array == t).tolist():
            out[i] = value
            done[i] = True
    for i in np.flatnonzero(~np.asarray(done, dtype=bool)).tolist():
        get(i)
    return out
