"""Saving and loading traces (one Parquet file) and pickling them: every corpus trace
comes back with the same dump and validates; loading never runs code from a file."""

import gc
import io
import math
import os
import multiprocessing as mp
import pickle
import random
import re
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import tracer
from corpus import CASES
from helpers import trace_corpus_case

pa = pytest.importorskip("pyarrow", reason="saving traces needs pyarrow (tracer[arrow])")
import pyarrow.parquet as pq  # noqa: E402

from tracer.persist.parquet import blob_column, read_blob, side_tables  # noqa: E402


def dump(root, levels=1000) -> str:
    out = io.StringIO()
    tracer.printlevels(root, levels, file=out)
    return out.getvalue()


def same_columns(a, b):
    ca, cb = a.trace.columns(), b.trace.columns()
    for name in ca:
        np.testing.assert_array_equal(ca[name], cb[name], err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_trace_round_trips_through_a_file(case, tmp_path):
    root = trace_corpus_case(case)
    path = tmp_path / "trace.parquet"
    tracer.save(root, path)
    back = tracer.load(path)
    same_columns(root, back)
    assert dump(back) == dump(root)
    tracer.validate(back)
    # A loaded trace saves again to the same content.
    again = tmp_path / "again.parquet"
    back.trace.save(again)
    assert dump(tracer.load(again)) == dump(root)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_trace_round_trips_through_pickle(case):
    root = trace_corpus_case(case)
    back = pickle.loads(pickle.dumps(root))
    assert isinstance(back, tracer.views.NestedCallNode) and back.row == 0
    same_columns(root, back)
    assert dump(back) == dump(root)
    tracer.validate(back)


def f(x):
    return math.sin(x) + x


def h(x, n):
    for i in range(n):
        x = x * 1.01 + i
    return x


def geom(p):
    return 1 if random.random() < p else 1 + geom(p)


def keeps(x):
    data = {"a": [1, 2.5, None], "b": (True, b"xy", "s")}
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    big = 10 ** 30
    return data, arr, np.int16(7), complex(1, 2), big, {1, 2}, frozenset({3}), x


def test_an_arrow_ipc_file_holds_the_same_trace(tmp_path):
    random.seed(2)
    root = tracer.track(geom, 0.2)
    tracer.save(root, tmp_path / "t.arrow")
    with open(tmp_path / "t.arrow", "rb") as f:
        assert f.read(6) == b"ARROW1"
    tracer.save(root, tmp_path / "t.bin", format="arrow", compression="zstd")
    for name in ("t.arrow", "t.bin"):
        back = tracer.load(tmp_path / name)
        same_columns(root, back)
        assert dump(back) == dump(root)
    with pytest.raises(ValueError, match="format must be one of"):
        tracer.save(root, tmp_path / "t.x", format="csv")


def test_values_of_the_encodable_types_come_back_equal(tmp_path):
    root = tracer.track(keeps, 3)
    tracer.save(root, tmp_path / "t.parquet")
    back = tracer.load(tmp_path / "t.parquet")
    data, arr, i16, z, big, s, fs, x = back.value
    assert data == {"a": [1, 2.5, None], "b": (True, b"xy", "s")}
    assert arr.dtype == np.float32 and arr.shape == (2, 3)
    np.testing.assert_array_equal(arr, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert type(i16) is np.int16 and i16 == 7
    assert z == complex(1, 2) and big == 10 ** 30 and s == {1, 2} and fs == frozenset({3})
    # One object, one decoded object: the result tuple's items are the nodes' values.
    ret = back.children[-1]
    assert ret.value is back.value


def test_other_values_come_back_as_text_with_their_type_name(tmp_path):
    root = tracer.track(f, 0.5)
    tracer.save(root, tmp_path / "t.parquet")
    back = tracer.load(tmp_path / "t.parquet")
    callee = back.children[0].value  # the function f, as an ArgumentNode's value
    assert isinstance(callee, tracer.persist.Opaque)
    assert type(callee).__name__ == "function" and callee.type_name == "builtins.function"
    assert callee.text == "f" and repr(callee).startswith("<function f at")


def test_an_exception_value_loads_as_an_exception(tmp_path):
    def fails(x):
        return 1 / x

    with pytest.raises(ZeroDivisionError):
        tracer.track(fails, 0)
    root = tracer.last_trace()
    tracer.save(root, tmp_path / "t.parquet")
    back = tracer.load(tmp_path / "t.parquet")
    assert back.raised and isinstance(back.value, tracer.persist.OpaqueException)
    assert isinstance(back.value, Exception)
    assert type(back.value).__name__ == "ZeroDivisionError"
    assert back.trace.exception is back.value
    tracer.validate(back)


def test_a_loaded_trace_answers_the_queries_and_the_ir(tmp_path):
    root = tracer.track(h, 1.0, 4)
    tracer.save(root, tmp_path / "t.parquet")
    back = tracer.load(tmp_path / "t.parquet")
    ret = back.children[-1]
    assert [n.row for n in ret.backward()] == [n.row for n in root.children[-1].backward()]
    x = back.children[1]
    assert [n.row for n in x.forward()] == [n.row for n in root.children[1].forward()]
    code = back.children[2].code
    assert isinstance(code, tracer.persist.LoadedCode)
    assert code.co_qualname == "h" and code.co_firstlineno == h.__code__.co_firstlineno
    assert str(tracer.ir(code)) == str(tracer.ir(h))
    assert code.ir_text == str(tracer.ir(h))
    loc = back.children[2].location
    assert loc.line == root.children[2].location.line
    assert back.children[2].ir[loc].text == root.children[2].ir[root.children[2].location].text


def test_the_file_is_one_parquet_table_readable_with_pyarrow(tmp_path):
    random.seed(5)
    root = tracer.track(geom, 0.3)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.num_rows == len(root.trace)
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups == 1
    jumps = table.filter(pa.compute.equal(table["kind"], 5))
    assert set(jumps["function"].to_pylist()) == {"geom"}
    assert set(jumps["value_kind"].to_pylist()) <= {"true", "false", "none"}
    assert jumps["line"].to_pylist()[0] == geom.__code__.co_firstlineno + 1


class Marker:
    """Unpickling this touches a file: the side effect a loader must never cause."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_values_saved_as_pickles_need_allow_pickle(tmp_path):
    root = tracer.track(keeps, 3)
    tracer.save(root, tmp_path / "t.parquet", values="pickle")
    with pytest.raises(tracer.PickleRefused, match="allow_pickle=True"):
        tracer.load(tmp_path / "t.parquet")
    with pytest.warns(UserWarning, match="unpickling"):
        back = tracer.load(tmp_path / "t.parquet", allow_pickle=True)
    assert back.value[0] == root.value[0]
    assert back.children[0].value is keeps  # pickled by reference: the function itself
    assert back.trace.snapshots  # copies, one per value: validate compares no identities
    tracer.validate(back)


def with_blob(table, column, **replaced):
    """`table` with some tables of its blob column `column` ("inputs": ref_start and
    refs; "tables": the side tables) replaced by lists of entries."""
    one_row = read_blob(table, column)
    for name, items in replaced.items():
        item_type = one_row.schema.field(name).type.value_type
        one_row = one_row.set_column(one_row.column_names.index(name), name,
                                     pa.array([items], pa.list_(item_type)))
    return table.set_column(table.column_names.index(column), column,
                            blob_column(one_row, table.num_rows))


def test_a_crafted_file_never_runs_its_payload(tmp_path):
    marker = tmp_path / "marker"
    payload = pickle.dumps(Marker(marker))
    root = tracer.track(f, 0.5)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    values = side_tables(table)["values"][0].values.to_pylist()
    # The payload as the value of every kind of entry, and as the code table's analysis.
    for entry in values:
        entry["blob"] = payload
        entry["text"] = payload.decode("latin-1")
    values[0]["tag"] = 18  # claims to be a pickle, in a file that says it holds none
    codes = side_tables(table)["codes"][0].values.to_pylist()
    for c in codes:
        c["analysis"] = payload.decode("latin-1")
    pq.write_table(with_blob(table, "tables", values=values, codes=codes),
                   tmp_path / "crafted.parquet")
    with pytest.raises(tracer.PickleRefused):
        tracer.load(tmp_path / "crafted.parquet")
    values[0]["tag"] = 8  # bytes: the payload is data
    pq.write_table(with_blob(table, "tables", values=values, codes=codes),
                   tmp_path / "crafted2.parquet")
    back = tracer.load(tmp_path / "crafted2.parquet")
    dump(back, 1)
    with pytest.raises(ValueError, match="damaged"):
        back.children[2].location  # the analysis is the payload: an error, not a run
    assert not marker.exists()


@pytest.mark.parametrize("column", ["inputs", "tables"])
def test_damaged_blob_columns_are_refused(column, tmp_path):
    root = tracer.track(f, 0.5)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    blob = table[column][0].as_py()
    n = table.num_rows
    for damaged in (blob[:len(blob) // 2], blob[:40] + bytes(64) + blob[104:], b"PAR1", None):
        new = pa.array([damaged] + [None] * (n - 1), pa.large_binary())
        bad = table.set_column(table.column_names.index(column), column, new)
        pq.write_table(bad, tmp_path / "bad.parquet")
        with pytest.raises(ValueError, match=f"{column} column"):
            tracer.load(tmp_path / "bad.parquet")
    # A table of another type is refused before it is read.
    one_row = read_blob(table, column)
    name = one_row.column_names[-1]
    one_row = one_row.set_column(one_row.num_columns - 1, name,
                                 pa.array([["x"]], pa.list_(pa.string())))
    bad = table.set_column(table.column_names.index(column), column, blob_column(one_row, n))
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=f"{name} table"):
        tracer.load(tmp_path / "bad.parquet")


def test_columns_that_are_no_trace_are_refused(tmp_path):
    root = tracer.track(h, 1.0, 3)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    aux = table["aux"].to_numpy().copy()
    aux[0] = 0  # the root's subtree would end before it starts: a reader would loop
    bad = table.set_column(table.column_names.index("aux"), "aux", pa.array(aux))
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="subtree ends"):
        tracer.load(tmp_path / "bad.parquet")
    refs = read_blob(table, "inputs")["refs"][0].values.to_pylist()
    refs[0] = 10 ** 6
    bad = with_blob(table, "inputs", refs=refs)
    pq.write_table(bad, tmp_path / "bad2.parquet")
    with pytest.raises(ValueError, match="neither a row nor a constant"):
        tracer.load(tmp_path / "bad2.parquet")


def test_load_says_what_is_wrong_with_a_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no trace file"):
        tracer.load(tmp_path / "missing.parquet")
    (tmp_path / "text.parquet").write_text("hello")
    with pytest.raises(ValueError, match="not a Parquet or Arrow file"):
        tracer.load(tmp_path / "text.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="not a tracer trace file"):
        tracer.load(tmp_path / "other.parquet")
    with pytest.raises(TypeError, match="node of a trace"):
        tracer.save(42, tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="values must be"):
        tracer.save(tracer.track(f, 1.0), tmp_path / "x.parquet", values="json")


def run_in_worker(seed):
    random.seed(seed)
    return tracer.track(geom, 0.3)


def test_traces_cross_process_boundaries():
    # spawn: a fresh interpreter, nothing inherited (pyarrow's threads make fork unsafe)
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        roots = list(pool.map(run_in_worker, [1, 2, 3]))
    for seed, root in zip([1, 2, 3], roots):
        assert isinstance(root.trace, tracer.views.Trace)
        tracer.validate(root)
        # As if traced here, but for the address of the Random instance.
        assert no_addresses(dump(root)) == no_addresses(dump(run_in_worker(seed)))


def no_addresses(text):
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", text)


@pytest.mark.parametrize("column", ["kind", "flags", "parent", "code", "aux", "value", "refs",
                                    "ref_start"])
def test_randomly_damaged_columns_are_refused_or_load_safely(column, tmp_path):
    # Whatever a column holds, load either refuses it with ValueError or builds a trace
    # whose readers end (no crash, no endless walk): the core checks before it builds.
    random.seed(4)
    root = tracer.track(geom, 0.3)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    rng = np.random.default_rng(len(column))
    for attempt in range(20):
        if column in ("refs", "ref_start"):
            vals = read_blob(table, "inputs")[column][0].values.to_pylist()
            vals[rng.integers(len(vals))] = int(rng.integers(-5, len(root.trace) + 5))
            bad = with_blob(table, "inputs", **{column: vals})
        else:
            col = table[column].to_numpy().copy()
            col[rng.integers(len(col))] = rng.integers(-3, len(root.trace) + 3) % (
                256 if col.dtype == np.uint8 else 1 << 31)
            bad = table.set_column(table.column_names.index(column), column, pa.array(col))
        pq.write_table(bad, tmp_path / "bad.parquet")
        try:
            back = tracer.load(tmp_path / "bad.parquet")
        except ValueError:
            continue
        try:
            dump(back)
            tracer.validate(back)
        except Exception:  # a wrong trace may print or validate with an error: no hang
            pass


# -- a loaded trace's columns are Arrow's buffers ------------------------------------

def first_value_address(array) -> int:
    """The address of an Arrow array's first value (its data buffer, past its offset)."""
    return array.buffers()[1].address + array.offset * (array.type.bit_width // 8)


@pytest.mark.parametrize("name", ["t.parquet", "t.arrow"])
def test_a_loaded_traces_columns_are_the_arrow_buffers(name, tmp_path):
    root = tracer.track(h, 1.0, 50)
    tracer.save(root, tmp_path / name)
    back = tracer.load(tmp_path / name)
    arrays = back.trace.source  # the Arrow arrays pyarrow read, by column
    cols = back.trace.columns()
    assert set(cols) <= set(arrays)
    for column, arr in cols.items():
        arrow = arrays[column]
        assert arr.ctypes.data == first_value_address(arrow), column
        assert np.shares_memory(arr, arrow.to_numpy()), column
    with pytest.raises(ValueError):
        cols["parent"][1] = 5  # read-only: the arena does not own them
    # ... and the trace still prints, validates, answers queries and pickles.
    assert dump(back) == dump(root)
    tracer.validate(back)
    ret = back.children[-1]
    assert [n.row for n in ret.backward()] == [n.row for n in root.children[-1].backward()]
    again = pickle.loads(pickle.dumps(back))
    assert again.trace.source is None and dump(again) == dump(root)
    tracer.validate(again)


def mapped_ranges(path) -> list[tuple[int, int]]:
    """The address ranges of this process's memory mappings of the file `path`."""
    name = str(path.resolve())
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(name):
                lo, hi = line.split()[0].split("-")
                ranges.append((int(lo, 16), int(hi, 16)))
    return ranges


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"),
                    reason="checking memory mappings needs Linux's /proc/self/maps")
def test_an_uncompressed_arrow_file_is_read_in_place(tmp_path):
    root = tracer.track(h, 1.0, 2000)
    path = tmp_path / "t.arrow"
    tracer.save(root, path, compression="none")
    back = tracer.load(path)
    ranges = mapped_ranges(path)
    assert ranges, "the file is memory-mapped"
    for name, column in back.trace.columns().items():
        address = column.ctypes.data
        assert any(lo <= address and address + column.nbytes <= hi for lo, hi in ranges), name
    # Saving over the file replaces it: the loaded trace keeps the old file's pages.
    tracer.save(tracer.track(h, 2.0, 3), path, compression="none")
    assert dump(back) == dump(root)
    tracer.validate(back)
    del back, column
    gc.collect()
    with open("/proc/self/maps") as maps:  # the old file is unmapped with the trace
        assert not any(str(path) in line for line in maps)


def test_a_column_in_several_chunks_is_combined(tmp_path):
    root = tracer.track(h, 1.0, 30)
    tracer.save(root, tmp_path / "t.arrow")
    with pa.memory_map(str(tmp_path / "t.arrow")) as source:
        table = pa.ipc.open_file(source).read_all()
    with pa.OSFile(str(tmp_path / "batches.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=7)  # record batches of 7 rows
    back = tracer.load(tmp_path / "batches.arrow")
    with pa.memory_map(str(tmp_path / "batches.arrow")) as source:
        assert pa.ipc.open_file(source).read_all()["parent"].num_chunks > 1
    same_columns(root, back)
    assert dump(back) == dump(root)
    tracer.validate(back)


def test_columns_of_another_integer_type_are_converted_or_refused(tmp_path):
    root = tracer.track(h, 1.0, 3)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    parent = table["parent"].to_numpy().astype(np.int64)  # as another tool may write it
    wide = table.set_column(table.column_names.index("parent"), "parent", pa.array(parent))
    pq.write_table(wide, tmp_path / "wide.parquet")
    assert dump(tracer.load(tmp_path / "wide.parquet")) == dump(root)
    parent[2] += 1 << 32  # would wrap to a valid-looking row
    pq.write_table(wide.set_column(table.column_names.index("parent"), "parent",
                                   pa.array(parent)), tmp_path / "huge.parquet")
    with pytest.raises(ValueError, match="outside int32"):
        tracer.load(tmp_path / "huge.parquet")
    kind = table["kind"].to_numpy().astype(np.float64)
    pq.write_table(table.set_column(table.column_names.index("kind"), "kind", pa.array(kind)),
                   tmp_path / "float.parquet")
    with pytest.raises(ValueError, match="not integers"):
        tracer.load(tmp_path / "float.parquet")


def test_a_file_of_the_first_layout_still_loads(tmp_path):
    # The first layout: refs a list column whose offsets are ref_start, and each side
    # table a list column whose row 0 holds it.
    root = tracer.track(h, 1.0, 3)
    tracer.save(root, tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    n = table.num_rows
    inputs = read_blob(table, "inputs")
    first = table.drop_columns(["inputs", "tables"]).append_column(
        "refs", pa.ListArray.from_arrays(inputs["ref_start"][0].values,
                                         inputs["refs"][0].values))
    side = side_tables(table)
    for name in side.column_names:
        items = side[name][0].values
        offsets = np.full(n + 1, len(items), dtype=np.int32)
        offsets[0] = 0
        first = first.append_column(name, pa.ListArray.from_arrays(pa.array(offsets), items))
    pq.write_table(first.replace_schema_metadata(table.schema.metadata),
                   tmp_path / "first.parquet")
    back = tracer.load(tmp_path / "first.parquet")
    same_columns(root, back)
    assert dump(back) == dump(root)
