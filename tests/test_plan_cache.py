"""Plans cached on disk (tracer.analysis.cache): read back equal, rebuilt when an entry
is stale, truncated or corrupt, harmless when the directory cannot be written, whole
when processes write at once, and warm in a second process; one pack per module,
plans of code compiled again reused from memory, plan data out of the collector's
lists."""

import errno
import gc
import json
import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plan_compare import plan_difference
from tracer.analysis import cache
from tracer.analysis.plan import PLAN_EXACT, PLAN_INTERVENE, PLAN_PLAIN, CodePlan, _Builder, build_plan

SRC = str(Path(__file__).resolve().parent.parent / "src")


def as_this_install(program: str) -> str:
    """`program` (run by `python -c` with PYTHONPATH=SRC) seeing the tracer version
    this process imported.  The version is part of the plan cache's fingerprint,
    hence of its folder's name and of every key, and setuptools-scm writes the
    current commit into src/tracer/_version.py at each build: a rebuild while the
    suite runs (a commit, then `make venv-3.13`) gave the processes these tests
    start another folder than this process's, which is what failed the writer
    tests under load (sessions 15-16: not a race in the writer).  Pinned here, the
    processes are what they stand for: the same install as this one."""
    import tracer
    prelude = ("import sys, types\n"
               "_pinned = types.ModuleType('tracer._version')\n"
               f"_pinned.version = {tracer.__version__!r}\n"
               "sys.modules['tracer._version'] = _pinned\n")
    return prelude + program


def sample(xs, key=None, *, scale=2, **kw):
    total = 0
    for i, x in enumerate(xs):
        try:
            total += x.real * scale if key is None else key(x)
        except (TypeError, AttributeError):
            total -= 1
    parts = [f"{k}={v!r}" for k, v in sorted(kw.items())]
    return total, sorted(xs, key=key, reverse=True), " ".join(parts)


def inner_writer():
    n = 0

    def bump():
        nonlocal n
        n += 1
        return n

    return bump() + bump()


CODES = [sample.__code__, inner_writer.__code__, textwrap.wrap.__code__,
         textwrap.TextWrapper._wrap_chunks.__code__]


def entry_file(code, mode=PLAN_PLAIN) -> Path:
    return cache.entry(code, mode).path


@pytest.mark.parametrize("mode", [PLAN_PLAIN, PLAN_EXACT, PLAN_INTERVENE])
def test_a_cached_plan_reads_back_equal(plan_dir, mode):
    for code in CODES:
        built = build_plan(code, mode)
        kept = cache.entry(code, mode).read()  # from memory
        assert plan_difference(CodePlan(code, mode, **kept), built) is None
        cache.forget()  # written, and read back as a new process would
        assert entry_file(code, mode).is_file()
        loaded_before = cache.stats["loaded"]
        fields = cache.entry(code, mode).read()
        assert fields is not None and cache.stats["loaded"] == loaded_before + 1
        loaded = CodePlan(code, mode, **fields)
        assert plan_difference(loaded, built) is None
        assert plan_difference(build_plan(code, mode), built) is None  # through build_plan


def test_the_ir_of_a_cached_plan_is_made_from_the_code(plan_dir):
    build_plan(sample.__code__)
    cache.forget()
    loaded = build_plan(sample.__code__)
    assert loaded._rec_at is None and loaded._layout is None  # read from the file
    ref = _Builder(sample.__code__).build()
    assert loaded.rec_at == ref.rec_at
    assert [i.line for i in loaded.layout.instrs] == [i.line for i in ref.layout.instrs]


def _rebuilt_after(code, damage) -> None:
    build_plan(code)
    cache.flush()
    good = cache.entry(code, PLAN_PLAIN).raw()
    cache.entry(code, PLAN_PLAIN).replace_raw(damage(good))  # (and forgets what it read)
    assert cache.entry(code, PLAN_PLAIN).read() is None
    plan = build_plan(code)  # built again, and the entry written again
    assert plan._rec_at is not None  # built (a plan read from the file has none yet)
    cache.forget()
    assert cache.entry(code, PLAN_PLAIN).raw() == good
    assert cache.entry(code, PLAN_PLAIN).read() is not None


def test_a_truncated_entry_is_rebuilt(plan_dir):
    for cut in (0, 10, 60, -1, -7):
        _rebuilt_after(sample.__code__, lambda b, cut=cut: b[:cut])


def test_a_corrupt_entry_is_rebuilt(plan_dir):
    def flip(at):
        def damage(b):
            b = bytearray(b)
            b[at] ^= 0x40
            return bytes(b)
        return damage
    for at in (0, 9, 20, 50, 70, 100, -3):
        _rebuilt_after(sample.__code__, flip(at))
    _rebuilt_after(sample.__code__, lambda b: b + b"\0")  # overlong


def test_a_stale_entry_is_rebuilt(plan_dir):
    # Another code object's entry (or one of another format) under this one's name.
    other = inner_writer.__code__
    build_plan(other)
    cache.flush()
    _rebuilt_after(sample.__code__, lambda b: cache.entry(other, PLAN_PLAIN).raw())
    _rebuilt_after(sample.__code__, lambda b: b[:8] + (cache.FORMAT + 1).to_bytes(4, "little") + b[12:])


def test_the_key_follows_what_the_plan_depends_on(plan_dir):
    def f(a, b):
        return a + b

    def g(a, b):
        return a - b

    def h(a, b):
        return a + b

    keys = {cache.entry(c, PLAN_PLAIN).key for c in (f.__code__, g.__code__, h.__code__)}
    assert len(keys) == 3  # different bytecode; same bytecode but another name and line
    same = f.__code__.replace()
    assert cache.entry(same, PLAN_PLAIN).key == cache.entry(f.__code__, PLAN_PLAIN).key
    renamed = f.__code__.replace(co_varnames=("x", "y"))
    assert cache.entry(renamed, PLAN_PLAIN).key != cache.entry(f.__code__, PLAN_PLAIN).key
    assert cache.entry(f.__code__, PLAN_EXACT).key != cache.entry(f.__code__, PLAN_PLAIN).key
    # A nested function that assigns a cell changes the outer plan's key.
    outer = inner_writer.__code__
    consts = tuple(c.replace(co_code=c.co_code) if hasattr(c, "co_code") else c
                   for c in outer.co_consts)
    assert cache.entry(outer.replace(co_consts=consts), PLAN_PLAIN).key == \
        cache.entry(outer, PLAN_PLAIN).key
    nested = [c for c in outer.co_consts if hasattr(c, "co_code")][0]
    changed = tuple(c.replace(co_names=c.co_names + ("extra",)) if c is nested else c
                    for c in outer.co_consts)
    assert cache.entry(outer.replace(co_consts=changed), PLAN_PLAIN).key != \
        cache.entry(outer, PLAN_PLAIN).key


def test_an_unwritable_directory_only_costs_speed(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    saved = dict(cache._state)
    try:
        cache.set_plan_cache(blocker / "plans")
        plan = build_plan(sample.__code__)
        assert plan_difference(plan, _Builder(sample.__code__).build()) is None
        cache.flush()
        assert cache._state["writable"] is False  # no more tries in this process
        cache.forget()
        assert cache.entry(sample.__code__, PLAN_PLAIN).read() is None
    finally:
        cache._state.clear()
        cache._state.update(saved)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes into read-only directories")
def test_a_read_only_directory_only_costs_speed(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    saved = dict(cache._state)
    try:
        cache.set_plan_cache(ro)
        assert plan_difference(build_plan(sample.__code__), _Builder(sample.__code__).build()) is None
        cache.flush()
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)
        cache._state.clear()
        cache._state.update(saved)


def test_a_full_disk_only_costs_speed(plan_dir, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache.os, "replace", full)
    plan = build_plan(sample.__code__)
    assert plan_difference(plan, _Builder(sample.__code__).build()) is None
    cache.flush()
    assert not entry_file(sample.__code__).exists()
    assert not list(entry_file(sample.__code__).parent.glob("*.tmp"))  # no temporary file left


def test_the_cache_can_be_turned_off(tmp_path):
    env = dict(os.environ, TRACER_PLAN_CACHE="0", TRACER_PLAN_CACHE_DIR=str(tmp_path),
               PYTHONPATH=SRC)
    code = ("import tracer\nfrom tracer.analysis import cache\n"
            "print(cache.plan_cache_dir())\nprint(tracer.track(sorted, [3, 1, 2]))\n"
            "def f(x):\n    return x + 1\n"
            "tracer.track(f, 1)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[0] == "None"
    assert list(tmp_path.iterdir()) == []


def test_the_default_directory_is_beside_the_users_cache(monkeypatch, tmp_path):
    saved = dict(cache._state)
    try:
        monkeypatch.delenv("TRACER_PLAN_CACHE_DIR", raising=False)
        monkeypatch.delenv("TRACER_PLAN_CACHE", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        cache._state["resolved"] = False
        assert cache.plan_cache_dir() == tmp_path / "tracer"
        monkeypatch.delenv("XDG_CACHE_HOME")
        cache._state["resolved"] = False
        assert cache.plan_cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "tracer"
    finally:
        cache._state.clear()
        cache._state.update(saved)


# A program run in fresh processes: traces some functions, then reports which code
# objects' plans it had to build (rather than read from the cache).
PROGRAM = textwrap.dedent("""
    import json, sys, textwrap, difflib
    import tracer
    from tracer.analysis import plan as plan_module

    built = []
    real = plan_module._Builder.build
    def counting(self):
        built.append(self.code.co_qualname)
        return real(self)
    plan_module._Builder.build = counting

    def work():
        text = " ".join(textwrap.wrap("the quick brown fox jumps over the lazy dog " * 4, 30))
        return difflib.SequenceMatcher(None, text, text[::-1]).ratio()

    root = tracer.track(work)
    during = list(built)
    tracer.validate(root)  # shows the IR: a plan read from the cache makes it from the code
    print(json.dumps({"built": during, "value": root.value}))
""")


def _run(plan_cache: Path) -> dict:
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=str(plan_cache), PYTHONPATH=SRC)
    env.pop("TRACER_PLAN_CACHE", None)
    out = subprocess.run([sys.executable, "-c", as_this_install(PROGRAM)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_is_warm_from_its_first_call(tmp_path):
    first = _run(tmp_path)
    assert "work" in first["built"] and len(first["built"]) > 5
    second = _run(tmp_path)
    assert second["value"] == first["value"]
    assert second["built"] == []


WRITER = textwrap.dedent("""
    import sys, textwrap, difflib, json, argparse
    from tracer.analysis import cache
    from tracer.analysis.plan import _Builder, PLAN_PLAIN
    sys.path.insert(0, {tests!r})
    from stdlib_walk import code_objects
    codes = [c for m in (textwrap, difflib, json.encoder, argparse) for c in code_objects(m)]
    plans = [(c, _Builder(c).build()) for c in codes]
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(5):
        for c, p in plans:
            assert cache.entry(c, PLAN_PLAIN).write(p)
        cache.flush()
    print(len(codes))
""")


def test_two_processes_writing_at_once_leave_whole_entries(tmp_path):
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=str(tmp_path), PYTHONPATH=SRC)
    program = as_this_install(WRITER.format(tests=str(Path(__file__).parent)))
    procs = [subprocess.Popen([sys.executable, "-c", program], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    for p in procs:  # both start writing the same entries together
        p.stdin.write("go\n")
        p.stdin.flush()
    counts = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        counts.append(int(out.split()[-1]))
    files = list(tmp_path.rglob("*"))
    assert not [f for f in files if f.name.endswith(".tmp")]
    packs = [f for f in files if f.suffix == ".pack"]
    assert len(packs) == 8  # one per module (the four, and what they hold of collections,
    #                         gettext, heapq and a namedtuple's `<string>`)
    assert sum(len(cache._pack_index(f.read_bytes())) for f in packs) == counts[0]
    # Every entry is whole: this process reads each one back, equal to its own build.
    import argparse
    import difflib
    import json as json_module
    import textwrap as textwrap_module

    from stdlib_walk import code_objects
    cache_saved = dict(cache._state)
    try:
        cache.set_plan_cache(tmp_path)
        # (the writers' folder is this process's: the same analysis sources and version)
        assert {f.parent.name for f in packs} == {os.path.basename(cache._folder())}
        loaded = cache.stats["loaded"]
        codes = [c for m in (textwrap_module, difflib, json_module.encoder, argparse)
                 for c in code_objects(m)]
        assert len(codes) == counts[0]
        for c in codes:
            fields = cache.entry(c, PLAN_PLAIN).read()
            assert fields is not None, c.co_qualname
            assert plan_difference(CodePlan(c, PLAN_PLAIN, **fields), _Builder(c).build()) is None
        assert cache.stats["loaded"] == loaded + len(codes)
    finally:
        cache._state.clear()
        cache._state.update(cache_saved)


# Another process: writes textwrap.dedent's entry (into the pack of textwrap.py, the
# pack this test's process writes too) when told to, and says when it is done.
OTHER_WRITER = textwrap.dedent("""
    import sys, textwrap
    from tracer.analysis import cache
    from tracer.analysis.plan import _Builder, PLAN_PLAIN
    code = textwrap.dedent.__code__
    plan = _Builder(code).build()
    print("ready", flush=True)
    sys.stdin.readline()
    assert cache.entry(code, PLAN_PLAIN).write(plan)
    cache.flush()
    print("done", flush=True)
""")


def test_a_pack_written_between_a_writers_read_and_rename_loses_nothing(plan_dir, monkeypatch):
    # The race two writers of one pack run: this process reads the pack on disk to
    # merge its new entry in, the other process writes the pack, then this one
    # renames its own over it.  The other may finish within the window only if
    # nothing holds it back (no lock: it then loses its entry, every time); with
    # the writers' lock it waits for this one's rename and merges.
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=str(plan_dir), PYTHONPATH=SRC)
    other = subprocess.Popen([sys.executable, "-c", as_this_install(OTHER_WRITER)], env=env,
                             stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready", other.stderr.read()
        finished = []
        real = cache._pack_bytes

        def meanwhile(entries):
            if not finished:  # (between this process's read and its rename)
                other.stdin.write("go\n")
                other.stdin.flush()
                ready, _, _ = select.select([other.stdout], [], [], 1.0)
                finished.append(bool(ready))
            return real(entries)

        monkeypatch.setattr(cache, "_pack_bytes", meanwhile)
        mine = textwrap.indent.__code__
        assert cache.entry(mine, PLAN_PLAIN).write(_Builder(mine).build())
        cache.flush()
        out, err = other.communicate(timeout=60)
        assert other.returncode == 0, err
        assert out.split() == ["done"]
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    monkeypatch.undo()
    cache.forget()
    for c in (mine, textwrap.dedent.__code__):
        assert cache.entry(c, PLAN_PLAIN).read() is not None, c.co_qualname
    assert len(list(plan_dir.rglob("*.pack"))) == 1
    assert finished == [False]  # the other process waited for this one's rename


# Another process: holds the folder's writers' lock until told to write
# textwrap.dedent's entry (its own flush takes the lock it already holds, and
# closing that descriptor releases it: POSIX record locks are per process).
LOCK_HOLDER = textwrap.dedent("""
    import fcntl, os, sys, textwrap
    from tracer.analysis import cache
    from tracer.analysis.plan import _Builder, PLAN_PLAIN
    folder = cache._folder()
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, cache._LOCK_NAME), os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    code = textwrap.dedent.__code__
    plan = _Builder(code).build()
    print("locked", flush=True)
    sys.stdin.readline()
    assert cache.entry(code, PLAN_PLAIN).write(plan)
    cache.flush()
    print("done", flush=True)
""")


def test_a_writer_that_cannot_get_the_lock_writes_nothing_and_keeps_its_entries(
        plan_dir, monkeypatch):
    # A writer that waited _LOCK_WAIT for the lock used to write its pack without
    # it: renamed over a pack the lock's holder wrote meanwhile, it dropped that
    # writer's entries.  Now it writes nothing, keeps its entries pending, and
    # writes them merged with the holder's at a later flush.
    monkeypatch.setattr(cache, "_LOCK_WAIT", 0.2)
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=str(plan_dir.parent), PYTHONPATH=SRC)
    holder = subprocess.Popen([sys.executable, "-c", as_this_install(LOCK_HOLDER)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    cache.set_plan_cache(plan_dir.parent)   # (the holder's folder: the same root)
    try:
        assert holder.stdout.readline().strip() == "locked", holder.stderr.read()
        mine = textwrap.indent.__code__
        entry = cache.entry(mine, PLAN_PLAIN)
        assert entry.write(_Builder(mine).build())
        assert entry.pack.flush() is False          # the lock is held: nothing written
        assert not Path(entry.pack.path).exists()
        assert list(entry.pack.pending) == [entry.key]
        assert cache._state["lock_waited"]
        assert entry.pack.flush() is False          # (tried once now, still held)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        out, err = holder.communicate(timeout=60)
        assert holder.returncode == 0, err
        assert out.split() == ["done"]
        assert entry.pack.flush() is True           # the lock is free: written, merged
        assert not entry.pack.pending
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    cache.forget()
    for c in (mine, textwrap.dedent.__code__):
        assert cache.entry(c, PLAN_PLAIN).read() is not None, c.co_qualname
    packs = list(plan_dir.parent.rglob("*.pack"))
    assert len(packs) == 1 and len(cache._pack_index(packs[0].read_bytes())) == 2
    assert not [f for f in plan_dir.parent.rglob("*.tmp")]


# -- packs, plans reused from memory, plan data and the collector ---------------------------
def _codes_of_file(module) -> list:
    """Every code object of `module`'s source, compiled afresh (one co_filename)."""
    found = []

    def collect(c):
        found.append(c)
        for k in c.co_consts:
            if hasattr(k, "co_code"):
                collect(k)

    collect(compile(Path(module.__file__).read_text(), module.__file__, "exec"))
    return found


def test_a_module_is_one_pack_read_once(plan_dir, monkeypatch):
    codes = _codes_of_file(textwrap)
    for c in codes:
        build_plan(c)
    cache.forget()
    packs = list(plan_dir.rglob("*.pack"))
    assert len(packs) == 1 and len(cache._pack_index(packs[0].read_bytes())) == len(codes)
    reads = []
    real = cache._pack_index
    monkeypatch.setattr(cache, "_pack_index", lambda data: reads.append(1) or real(data))
    loaded = cache.stats["loaded"]
    for c in _codes_of_file(textwrap):  # (new code objects: nothing kept in the core)
        assert cache.entry(c, PLAN_PLAIN).read() is not None
    assert cache.stats["loaded"] == loaded + len(codes)
    assert len(reads) == 1  # the pack was read and indexed once


def test_new_entries_are_written_in_batches(plan_dir, monkeypatch):
    build_plan(sample.__code__)
    build_plan(inner_writer.__code__)
    assert not entry_file(sample.__code__).exists()  # fewer than a batch: kept in memory
    cache.flush()
    assert entry_file(sample.__code__).exists()
    monkeypatch.setattr(cache, "_FLUSH_AFTER", 0.0)  # ... or written once a batch is old
    build_plan(entry_file.__code__)
    assert cache.entry(entry_file.__code__, PLAN_PLAIN).raw() is not None


def test_a_pack_written_meanwhile_is_merged(plan_dir):
    build_plan(sample.__code__)
    cache.forget()
    assert cache.entry(sample.__code__, PLAN_PLAIN).read() is not None  # the pack read
    # Another process adds an entry to the pack after this one read it ...
    other = inner_writer.__code__
    e = cache.entry(other, PLAN_PLAIN)
    data = Path(e.pack.path).read_bytes()
    entries = {k: data[a:a + n] for k, (a, n) in cache._pack_index(data).items()}
    entries[e.key] = cache._encode(_Builder(other).build(), other, e.key)
    Path(e.pack.path).write_bytes(cache._pack_bytes(entries))
    # ... and this one writes its own: the pack holds all three.
    build_plan(entry_file.__code__)
    cache.forget()
    for c in (sample.__code__, other, entry_file.__code__):
        assert cache.entry(c, PLAN_PLAIN).read() is not None, c.co_qualname


@pytest.mark.parametrize("damage", ["truncated", "index", "magic", "garbage", "empty"])
def test_a_damaged_pack_is_rebuilt(plan_dir, damage):
    codes = (sample.__code__, inner_writer.__code__)
    for c in codes:
        build_plan(c)
    cache.forget()
    path = entry_file(sample.__code__)
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "index":
        data[cache._PACK_HEADER.size + 3] ^= 0x10
    elif damage == "magic":
        data[0] ^= 0x01
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    for c in codes:
        plan = build_plan(c)
        assert plan_difference(plan, _Builder(c).build()) is None
    cache.forget()
    for c in codes:  # written again, whole
        assert cache.entry(c, PLAN_PLAIN).read() is not None


SAME_SOURCE = "def f(x, key=None):\n    return sorted(x, key=key, reverse=True)\n"


def test_code_compiled_again_reuses_the_plan(plan_dir, monkeypatch):
    def compiled():
        ns: dict = {}
        exec(compile(SAME_SOURCE, "<string>", "exec"), ns)
        return ns["f"].__code__

    first, again = compiled(), compiled()
    assert first is not again and first == again
    build_plan(first)
    cache.forget()
    build_plan(first.replace())  # read from the pack: now kept in memory
    for p in plan_dir.rglob("*.pack"):
        p.unlink()  # nothing on disk any more
    builds = []
    real = _Builder.build
    monkeypatch.setattr(_Builder, "build", lambda self: builds.append(1) or real(self))
    reused = cache.stats["reused"]
    plan = build_plan(again)
    assert builds == [] and cache.stats["reused"] == reused + 1
    assert plan_difference(plan, real(_Builder(again))) is None
    # its keyword names are the new code's own constant (the core matches them by identity)
    names = [s for s in plan.statics if type(s) is tuple]
    assert names and all(any(s is c for c in again.co_consts) for s in names)


def test_plan_data_is_not_tracked_by_the_collector(plan_dir):
    import weakref

    def kept(plan):
        return [name for name in cache._ARRAYS + ("events", "jump_events", "statics")
                if gc.is_tracked(getattr(plan, name))]

    ns: dict = {}
    exec(compile("def f(a):\n    return [x * a for x in range(3)]\n", "<made>", "exec"), ns)
    code = ns["f"].__code__
    assert kept(build_plan(code)) == []   # built
    cache.forget()
    assert kept(build_plan(code.replace())) == []   # read from the pack
    assert kept(build_plan(code.replace())) == []   # reused from memory
    # ... nor the fields the cache keeps in memory by key (built, loaded or reused)
    assert cache._state["memo"] and not any(map(gc.is_tracked, cache._state["memo"].values()))
    # The program's own objects die as they did: the code object (held weakly by its
    # plan) goes with its function.
    ref = weakref.ref(code)
    del ns, code
    gc.collect()
    assert ref() is None


def test_the_plans_kept_in_memory_are_bounded(plan_dir, monkeypatch):
    monkeypatch.setattr(cache, "_MEMO_MAX", 2)
    codes = [sample.__code__, inner_writer.__code__, entry_file.__code__]
    for c in codes:
        build_plan(c)
    memo = cache._state["memo"]
    assert len(memo) == 2 and cache.entry(codes[0], PLAN_PLAIN).key not in memo  # oldest out
    assert cache.entry(codes[2], PLAN_PLAIN).key in memo
