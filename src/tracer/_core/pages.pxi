# Column memory: where a trace's big columns live and how they grow.
#
# A big trace's columns are written once, front to back, and are fresh memory: the
# kernel zeroes every page on its first touch (on the measured machine that is the
# larger part of recording `h` at 10^7 iterations, 6·10^7 rows, 1.9 GB of columns).
# Growth by malloc + copy touched every byte twice: the copy's destination is fresh
# memory too, zeroed and then overwritten.  So a column of 4 MiB and more is its own
# mapping, 2 MiB aligned, and it grows by mremap: in place when the addresses after
# it are free, else its page tables move to a fresh aligned range.  Nothing is
# copied and no page is zeroed twice; pages of capacity never written are never
# touched.  Small columns stay malloc's.
#
# Transparent huge pages (one fault per 2 MiB instead of per 4 KiB) are asked for
# only when `column_huge_pages(True)` says so: on the development machine (a VM) a
# first trace of h at 10^7 iterations took 8.9-9.2x untraced with them and
# 5.4-6.2x without (fresh 2 MiB pages cost it ~2 s/GiB on first touch, 4 KiB pages
# ~0.6 s/GiB); with the spare columns reused, neither faults at all.
#
# Which blocks are mappings is kept in a small registry (not inferred from sizes),
# so a growth that failed half-way through a trace's columns never frees a mapping
# with free() or a heap block with munmap.  Elsewhere than Linux (no mremap) every
# column is malloc's, as before.

from cpython.pyport cimport PY_SSIZE_T_MAX

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #if defined(__linux__)
    #  ifndef _GNU_SOURCE
    #    define _GNU_SOURCE
    #  endif
    #  include <sys/mman.h>
    #  include <unistd.h>
    #  if defined(MREMAP_MAYMOVE) && defined(MREMAP_FIXED)
    #    define TRACER_MAPPED_COLUMNS 1
    #  endif
    #endif

    /* Columns this big are mappings (4 MiB: two huge pages). */
    static size_t tracer_column_map_bytes = (size_t)4 << 20;
    /* Whether new mappings are advised for transparent huge pages (see
       column_huge_pages: off by default, measured slower on first touch). */
    static int tracer_column_huge = 0;
    #define TRACER_HUGE ((size_t)2 << 20)

    #ifdef TRACER_MAPPED_COLUMNS
    typedef struct { void *p; size_t len; } tracer_mapping;
    static tracer_mapping *tracer_maps = NULL;
    static size_t tracer_nmaps = 0, tracer_mapcap = 0;
    static size_t tracer_mapped_bytes = 0;

    static size_t tracer_round_huge(size_t n) {
        return (n + TRACER_HUGE - 1) & ~(TRACER_HUGE - 1);
    }

    static tracer_mapping *tracer_find_map(void *p) {
        size_t i;
        if (p == NULL) return NULL;
        for (i = 0; i < tracer_nmaps; i++) {
            if (tracer_maps[i].p == p) return &tracer_maps[i];
        }
        return NULL;
    }

    static int tracer_add_map(void *p, size_t len) {
        if (tracer_nmaps == tracer_mapcap) {
            size_t cap = tracer_mapcap ? 2 * tracer_mapcap : 64;
            tracer_mapping *m = (tracer_mapping *)realloc(tracer_maps, cap * sizeof(tracer_mapping));
            if (m == NULL) return -1;
            tracer_maps = m;
            tracer_mapcap = cap;
        }
        tracer_maps[tracer_nmaps].p = p;
        tracer_maps[tracer_nmaps].len = len;
        tracer_nmaps++;
        tracer_mapped_bytes += len;
        return 0;
    }

    /* `len` bytes (a multiple of 2 MiB) mapped at a 2 MiB-aligned address, advised
       for huge pages before anything touches them; NULL when the kernel refuses. */
    static void *tracer_map_aligned(size_t len) {
        size_t span = len + TRACER_HUGE, head, tail;
        uintptr_t a;
        char *p = (char *)mmap(NULL, span, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == (char *)MAP_FAILED) return NULL;
        a = ((uintptr_t)p + TRACER_HUGE - 1) & ~(uintptr_t)(TRACER_HUGE - 1);
        head = (size_t)(a - (uintptr_t)p);
        tail = span - head - len;
        if (head) munmap(p, head);
        if (tail) munmap((char *)a + len, tail);
    #ifdef MADV_HUGEPAGE
        if (tracer_column_huge) (void)madvise((void *)a, len, MADV_HUGEPAGE);
    #endif
        return (void *)a;
    }
    #endif

    /* The column `p` of `was` bytes grown to `size` bytes, contents kept; NULL (and
       `p` unchanged) when memory runs out. */
    static void *tracer_column_grow(void *p, size_t was, size_t size) {
    #ifdef TRACER_MAPPED_COLUMNS
        tracer_mapping *m = tracer_find_map(p);
        void *q;
        size_t len;
        if (m == NULL && size < tracer_column_map_bytes) {
            return realloc(p, size ? size : 1);
        }
        len = tracer_round_huge(size);
        if (m == NULL) {
            /* From the heap to a mapping: the small prefix is copied once. */
            q = tracer_map_aligned(len);
            if (q == NULL) return NULL;
            if (tracer_add_map(q, len) < 0) { munmap(q, len); return NULL; }
            if (p != NULL) {
                memcpy(q, p, was);
                free(p);
            }
            return q;
        }
        if (len <= m->len) return p;
        /* In place: the addresses after the mapping are free. */
        q = mremap(p, m->len, len, 0);
        if (q == MAP_FAILED) {
            /* Elsewhere: the pages (and their page tables) move to a fresh aligned
               range; a PMD-aligned move keeps the huge pages whole. */
            void *dst = tracer_map_aligned(len);
            if (dst == NULL) return NULL;
            q = mremap(p, m->len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
            if (q == MAP_FAILED) { munmap(dst, len); return NULL; }
        }
        tracer_mapped_bytes += len - m->len;
        m->p = q;
        m->len = len;
        return q;
    #else
        (void)was;
        return realloc(p, size ? size : 1);
    #endif
    }

    static void tracer_column_free(void *p) {
    #ifdef TRACER_MAPPED_COLUMNS
        tracer_mapping *m = tracer_find_map(p);
        if (m != NULL) {
            munmap(m->p, m->len);
            tracer_mapped_bytes -= m->len;
            *m = tracer_maps[--tracer_nmaps];
            return;
        }
    #endif
        free(p);
    }

    /* The whole pages of a block's bytes [from, to) (a column's, or a cached
       arena's) given back to the kernel lazily: it takes them only when it needs
       memory, and until then a write reuses them without a fault or zeroing
       (MADV_FREE; though not for free: the first write to each such page costs the
       processor a page-table update, ~0.25 us a page on the development machine).
       `p` is a mapped column, an arena or a heap column (malloc's block: only pages
       wholly inside the bytes are advised, and what malloc keeps in a block's first
       bytes is outside them); `to` is at most the block's size.  Returns 1 when
       advised, -1 when the kernel refused (no MADV_FREE before Linux 4.5), 0 where
       there is no MADV_FREE. */
    static int tracer_column_release(void *p, size_t from, size_t to) {
    #if defined(__linux__) && defined(MADV_FREE)
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)p + from + page - 1) & ~(page - 1);
        uintptr_t hi = ((uintptr_t)p + to) & ~(page - 1);
        if (p == NULL || hi <= lo) return 1;
        return madvise((void *)lo, hi - lo, MADV_FREE) == 0 ? 1 : -1;
    #else
        (void)p; (void)from; (void)to;
        return 0;
    #endif
    }

    /* The same for a mapped column only, `to` clipped to its mapping: 1 when `p`
       is a mapping so advised, 0 when it is not a mapping (a heap column: kept as
       it is), -1 when the kernel refused. */
    static int tracer_column_lazy_free(void *p, size_t from, size_t to) {
    #ifdef TRACER_MAPPED_COLUMNS
        tracer_mapping *m = tracer_find_map(p);
        if (m == NULL) return 0;
        if (to > m->len) to = m->len;
        return tracer_column_release(p, from, to) == 1 ? 1 : -1;
    #else
        (void)from; (void)to;
        return p == NULL ? 0 : -1;
    #endif
    }

    /* Whether `p` is one of the mapped columns. */
    static int tracer_column_is_mapped(void *p) {
    #ifdef TRACER_MAPPED_COLUMNS
        return tracer_find_map(p) != NULL;
    #else
        (void)p;
        return 0;
    #endif
    }

    /* Bytes of columns held in mappings now, and how many mappings. */
    static size_t tracer_column_mapped_bytes(void) {
    #ifdef TRACER_MAPPED_COLUMNS
        return tracer_mapped_bytes;
    #else
        return 0;
    #endif
    }
    static size_t tracer_column_mappings(void) {
    #ifdef TRACER_MAPPED_COLUMNS
        return tracer_nmaps;
    #else
        return 0;
    #endif
    }
    """
    void *_column_grow "tracer_column_grow"(void *p, size_t was, size_t size) noexcept
    void _column_free "tracer_column_free"(void *p) noexcept
    int _column_lazy_free "tracer_column_lazy_free"(void *p, size_t start, size_t stop) noexcept
    int _column_release "tracer_column_release"(void *p, size_t start, size_t stop) noexcept
    bint _column_is_mapped "tracer_column_is_mapped"(void *p) noexcept
    size_t _column_mapped_bytes "tracer_column_mapped_bytes"() noexcept
    size_t _column_mappings "tracer_column_mappings"() noexcept
    int _column_huge "tracer_column_huge"


cdef void *_column_realloc(void *p, size_t was, size_t n, size_t itemsize) except NULL:
    """A column of `was` items grown to `n` items (contents kept)."""
    cdef void *q = _column_grow(p, was * itemsize, n * itemsize)
    if q == NULL:
        raise MemoryError("tracer: out of memory growing the trace")
    return q


def column_huge_pages(enabled=None):
    """Get or set whether columns of 4 MiB and more made from now on are advised for
    transparent huge pages (``madvise(MADV_HUGEPAGE)``; Linux, where the system's
    THP setting allows it).  Returns the setting before the call (default False).

    Huge pages mean one page fault per 2 MiB instead of per 4 KiB.  Whether that is
    faster depends on the machine: on the development machine (a VM) a first big
    trace in a process was slower with them (fresh 2 MiB pages cost more there than
    512 faults of 4 KiB), so they are off unless asked for.
    """
    global _column_huge
    old = bool(_column_huge)
    if enabled is not None:
        if not isinstance(enabled, bool):
            raise TypeError(f"column_huge_pages takes True or False, not {enabled!r}")
        _column_huge = 1 if enabled else 0
    return old


def column_memory():
    """`(bytes, mappings)`: the trace columns held now in their own huge-page mappings
    (columns of 4 MiB and more, on Linux), spare columns included."""
    return _column_mapped_bytes(), _column_mappings()


# ---------------------------------------------------------------------------------
# Object memory: the arenas a dropped trace's values leave empty, kept for the
# next trace.
#
# Under values="keep" a trace holds every value the program made; h at 10^7
# iterations keeps 3·10^7 floats and ints, 960 MiB of pymalloc's 1 MiB arenas.  When
# the trace is dropped pymalloc hands those arenas back to the kernel (munmap), and
# the next trace pays a fault for each 4 KiB of them again (234,000 faults, a fifth
# of the traced run; at compare.py's size, 1,239 faults a run, h 3.0x untraced with
# them and 2.3-2.4x without).  So the core puts a cache in front of the
# interpreter's arena allocator (PyObject_SetArenaAllocator), installed by the first
# trace made (importing tracer changes nothing): an arena freed while a trace
# releases its values is kept, up to ARENA_CACHE_LIMIT bytes (1 GiB by default, as
# the spare columns: the first TRACER_ARENA_RESIDENT of them resident, the pages of
# the rest given back lazily, MADV_FREE, the kernel's to take when it needs memory),
# and the next arena pymalloc asks for is one of them.  Arenas the program frees
# otherwise go to the kernel as they would untraced.  Every arena still comes from,
# and is finally freed by, the allocator that was installed before (the cache owns
# none), so arenas made before the cache was installed are freed exactly as they
# would have been.  A cache busy in another interpreter (per-interpreter GILs share
# the allocator) is bypassed, never waited on.  `arena_cache_limit(0)` turns it off
# (the allocator, once installed, then passes every arena through).

cdef extern from *:
    """
    #if defined(__linux__) && defined(MADV_FREE) && (defined(__GNUC__) || defined(__clang__))
    #  define TRACER_ARENA_CACHE 1
    #endif
    #ifdef TRACER_ARENA_CACHE
    #include <unistd.h>
    #define TRACER_ARENA_SLOTS 4096
    /* The cached arenas kept resident (the rest given back lazily): as much as the
       spare columns keep resident by default. */
    #define TRACER_ARENA_RESIDENT ((size_t)64 << 20)
    static PyObjectArenaAllocator tracer_prior_arenas;
    static int tracer_arenas_installed = 0;
    static void *tracer_arena_ptr[TRACER_ARENA_SLOTS];
    static size_t tracer_arena_size[TRACER_ARENA_SLOTS];
    static size_t tracer_narenas = 0, tracer_arena_bytes = 0;
    static size_t tracer_arena_limit = (size_t)1 << 30;
    static int tracer_arena_lock = 0;
    /* Above 0 while this thread releases a trace's values: the arenas freed
       then are the trace's to keep. */
    static __thread int tracer_arena_catching = 0;

    static int tracer_arena_acquire(void) {
        return __atomic_exchange_n(&tracer_arena_lock, 1, __ATOMIC_ACQUIRE) == 0;
    }
    static void tracer_arena_release(void) {
        __atomic_store_n(&tracer_arena_lock, 0, __ATOMIC_RELEASE);
    }

    static void *tracer_arena_alloc(void *ctx, size_t size) {
        (void)ctx;
        if (tracer_arena_acquire()) {
            void *p = NULL;
            if (tracer_narenas && tracer_arena_size[tracer_narenas - 1] == size) {
                p = tracer_arena_ptr[--tracer_narenas];
                tracer_arena_bytes -= size;
            }
            tracer_arena_release();
            if (p != NULL) return p;
        }
        return tracer_prior_arenas.alloc(tracer_prior_arenas.ctx, size);
    }

    static void tracer_arena_free(void *ctx, void *p, size_t size) {
        (void)ctx;
        if (p != NULL && tracer_arena_catching > 0 && tracer_arena_acquire()) {
            if (tracer_narenas < TRACER_ARENA_SLOTS
                    && tracer_arena_bytes + size <= tracer_arena_limit) {
                /* Past the resident share, the whole pages inside the arena are
                   given back lazily: its contents are garbage now.  (Within it
                   they stay: rewriting a lazily freed page costs ~0.25 us.) */
                if (tracer_arena_bytes + size > TRACER_ARENA_RESIDENT)
                    (void)tracer_column_release(p, 0, size);
                tracer_arena_ptr[tracer_narenas] = p;
                tracer_arena_size[tracer_narenas] = size;
                tracer_narenas++;
                tracer_arena_bytes += size;
                tracer_arena_release();
                return;
            }
            tracer_arena_release();
        }
        tracer_prior_arenas.free(tracer_prior_arenas.ctx, p, size);
    }

    /* Give every cached arena back to the prior allocator. */
    static void tracer_arena_flush(void) {
        while (1) {
            void *p; size_t size;
            if (!tracer_arena_acquire()) return;
            if (tracer_narenas == 0) { tracer_arena_release(); return; }
            p = tracer_arena_ptr[--tracer_narenas];
            size = tracer_arena_size[tracer_narenas];
            tracer_arena_bytes -= size;
            tracer_arena_release();
            tracer_prior_arenas.free(tracer_prior_arenas.ctx, p, size);
        }
    }

    static void tracer_arena_cache_install(void) {
        PyObjectArenaAllocator mine;
        if (tracer_arenas_installed) return;
        PyObject_GetArenaAllocator(&tracer_prior_arenas);
        mine.ctx = NULL;
        mine.alloc = tracer_arena_alloc;
        mine.free = tracer_arena_free;
        PyObject_SetArenaAllocator(&mine);
        tracer_arenas_installed = 1;
    }

    /* The cache in front of the allocator, unless the limit says none (the first
       trace made asks: importing tracer changes no allocator). */
    static void tracer_arena_cache_ready(void) {
        if (!tracer_arenas_installed && tracer_arena_limit > 0) tracer_arena_cache_install();
    }
    static int tracer_arena_cache_installed(void) { return tracer_arenas_installed; }
    /* Around the release of a trace's values (nested releases count). */
    static void tracer_arena_catch(int on) { tracer_arena_catching += on ? 1 : -1; }

    /* Sets the limit (0: keep none, flushing what is kept); returns the old one. */
    static size_t tracer_arena_cache_limit(size_t limit) {
        size_t old = tracer_arena_limit;
        /* Installed on first use only: importing tracer leaves the process's
           allocator as it was. */
        if (limit > 0) tracer_arena_cache_install();
        tracer_arena_limit = limit;
        if (tracer_arena_bytes > limit) tracer_arena_flush();
        return old;
    }
    static size_t tracer_arena_cache_bytes(void) { return tracer_arena_bytes; }
    static size_t tracer_arena_cache_get_limit(void) { return tracer_arena_limit; }
    #else
    static void tracer_arena_cache_ready(void) {}
    static int tracer_arena_cache_installed(void) { return 0; }
    static void tracer_arena_catch(int on) { (void)on; }
    static size_t tracer_arena_cache_get_limit(void) { return 0; }
    static void tracer_arena_cache_install(void) {}
    static size_t tracer_arena_cache_limit(size_t limit) { (void)limit; return 0; }
    static size_t tracer_arena_cache_bytes(void) { return 0; }
    #endif
    """
    void _arena_cache_install "tracer_arena_cache_install"() noexcept
    void _arena_cache_ready "tracer_arena_cache_ready"() noexcept
    int _arena_cache_installed "tracer_arena_cache_installed"() noexcept
    void _arena_catch "tracer_arena_catch"(int on) noexcept
    size_t _arena_cache_limit "tracer_arena_cache_limit"(size_t limit) noexcept
    size_t _arena_cache_bytes "tracer_arena_cache_bytes"() noexcept
    size_t _arena_cache_get_limit "tracer_arena_cache_get_limit"() noexcept



def arena_cache_limit(limit=None):
    """Get or set how many bytes of object arenas (pymalloc's) that a dropped trace's
    values left empty are kept for the next objects, instead of going back to the
    kernel (the first 64 MiB resident, any more given back lazily: Linux's
    MADV_FREE).

    A trace that keeps its values (values="keep") holds every object the program
    made; when it is dropped their arenas are freed, and the next trace would
    fault their pages in again.  Returns the limit in force before the call
    (1 GiB by default); ``0`` keeps none and frees what is kept now.  Elsewhere
    than Linux nothing is kept and the limit is 0.

    Importing tracer does not touch the interpreter's allocator: the first trace
    made puts the cache in front of it, for the rest of the process, unless the
    limit is 0 then.  Only arenas freed while a trace releases its values are
    kept; the program's own go to the kernel as they would untraced.
    """
    if limit is None:
        return _arena_cache_get_limit()
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise TypeError(f"the limit is a number of bytes (an int >= 0), not {limit!r}")
    return _arena_cache_limit(min(limit, PY_SSIZE_T_MAX))


def _arena_cache_in_place():
    """Whether the arena cache is in front of the interpreter's allocator (tests)."""
    return bool(_arena_cache_installed())


def arena_cache_bytes():
    """Bytes of freed object arenas kept now (see `arena_cache_limit`)."""
    return _arena_cache_bytes()
