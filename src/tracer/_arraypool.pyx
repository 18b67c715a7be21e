# cython: language_level=3
"""Numpy array buffers of traced calls kept for the next traced call (NEP 49 handler).

Under values="keep" a trace holds every array the program made; a numpy model's
intermediates are large (the MLP of bench/workloads.py: 300 arrays of 512 KiB per
run).  When the trace is dropped, glibc gives that memory back to the kernel and
the next traced run faults every page of it in again: measured 38,000 minor faults
and 62 ms of system time on an 83 ms run (bench/RESULTS.md, session 11).  Telling the
whole process's malloc to keep freed memory (mallopt) would fix it but is not a
library's call to make.  So only while a traced call runs, and only in its own
thread and context, numpy allocates through this handler (numpy's own per-context
variable, `PyDataMem_SetHandler`): buffers of 64 KiB and more are mappings kept in
a pool when freed, resident up to `array_buffer_cache_limit()` bytes and beyond
that up to `array_buffer_cache_lazy_limit()` bytes given back to the kernel lazily
(MADV_FREE: the kernel takes the pages only when it needs memory; until then the
next traced run writes into pages already there).  Everything smaller goes to
numpy's default handler, as untraced.

An array keeps its handler for life, so the handler's functions are called from any
thread (numpy may free without the GIL), after tracing ended, and during interpreter
shutdown: the pool is plain C state behind a mutex, never freed.  Which pointers are
the pool's is kept in a table (never inferred from sizes), so a buffer numpy's
default handler made is always freed by it.  Linux only (mremap, MADV_FREE):
elsewhere `enter` installs nothing.
"""

from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.ref cimport PyObject

cdef extern from "numpy/arrayobject.h":
    int _import_array() except -1
    object PyDataMem_SetHandler(object handler)
    object PyDataMem_GetHandler()
    PyObject *PyDataMem_DefaultHandler

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #include <pthread.h>
    #if defined(__linux__)
    #  include <sys/mman.h>
    #  include <unistd.h>
    #  if defined(MADV_FREE) && defined(MREMAP_MAYMOVE)
    #    define TRACER_POOL 1
    #  endif
    #endif

    /* Buffers this big are the pool's (smaller ones stay the default handler's). */
    #define TP_MIN ((size_t)64 << 10)
    /* Size classes: from 64 KiB up, each power of two split in eight steps (a
       buffer is at most 1/8 bigger than asked for); index 0 is 64 KiB. */
    #define TP_CLASSES (8 * (64 - 15))

    static PyDataMemAllocator tp_default;   /* numpy's default handler's functions */
    /* Freed buffers kept resident up to tp_limit bytes, and beyond that up to
       tp_lazy_limit bytes given back lazily (MADV_FREE).  Lazily freed pages cost
       the next writer more than resident ones (measured on the MLP: 1.14-1.20x
       with every buffer lazy, 1.04-1.07x with all resident), but the kernel can
       take them whenever it needs memory. */
    static size_t tp_limit = (size_t)64 << 20;
    static size_t tp_lazy_limit = (size_t)1 << 30;
    static size_t tp_resident_bytes = 0, tp_lazy_bytes = 0, tp_live_bytes = 0, tp_live_n = 0;
    static size_t tp_reused = 0, tp_mapped = 0;
    static pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;

    #ifdef TRACER_POOL
    /* The pool's live buffers: open addressing (linear probing) keyed by address. */
    typedef struct { void *p; size_t len; } tp_entry;
    static tp_entry *tp_live = NULL;
    static size_t tp_live_cap = 0;
    /* The cached (freed) buffers of each size class, most recently freed last;
       the low bit of an item is set when its pages were given back lazily. */
    typedef struct { void **items; size_t n, cap; } tp_stack;
    static tp_stack tp_cache[TP_CLASSES];

    static size_t tp_page = 4096;

    static void tp_lock_prepare(void) { pthread_mutex_lock(&tp_lock); }
    static void tp_lock_release(void) { pthread_mutex_unlock(&tp_lock); }

    /* The class of a buffer of `size` bytes (>= TP_MIN) and its length in *len. */
    static int tp_class(size_t size, size_t *len) {
        int b = 63 - __builtin_clzll((unsigned long long)(size - 1));  /* 2^b < size <= 2^(b+1) */
        size_t step = (size_t)1 << (b - 3);
        size_t k = (size - ((size_t)1 << b) + step - 1) / step;         /* 1..8 */
        *len = ((size_t)1 << b) + k * step;
        return (b - 15) * 8 + (int)k - 1;
    }

    static size_t tp_hash(void *p, size_t cap) {
        return (size_t)(((uintptr_t)p >> 12) * (uintptr_t)0x9E3779B97F4A7C15ULL) & (cap - 1);
    }

    /* Under the lock.  -1 when the table cannot grow (out of memory). */
    static int tp_live_add(void *p, size_t len) {
        size_t i;
        if (2 * (tp_live_n + 1) > tp_live_cap) {
            size_t cap = tp_live_cap ? 2 * tp_live_cap : 256, j;
            tp_entry *t = (tp_entry *)calloc(cap, sizeof(tp_entry));
            if (t == NULL) return -1;
            for (j = 0; j < tp_live_cap; j++) {
                if (tp_live[j].p == NULL) continue;
                i = tp_hash(tp_live[j].p, cap);
                while (t[i].p != NULL) i = (i + 1) & (cap - 1);
                t[i] = tp_live[j];
            }
            free(tp_live);
            tp_live = t;
            tp_live_cap = cap;
        }
        i = tp_hash(p, tp_live_cap);
        while (tp_live[i].p != NULL) i = (i + 1) & (tp_live_cap - 1);
        tp_live[i].p = p;
        tp_live[i].len = len;
        tp_live_n++;
        tp_live_bytes += len;
        return 0;
    }

    /* Under the lock: the length of the pool's live buffer `p`, removed from the
       table, or 0 when `p` is not the pool's. */
    static size_t tp_live_take(void *p) {
        size_t i, j, len;
        if (tp_live_cap == 0 || p == NULL) return 0;
        i = tp_hash(p, tp_live_cap);
        while (tp_live[i].p != p) {
            if (tp_live[i].p == NULL) return 0;
            i = (i + 1) & (tp_live_cap - 1);
        }
        len = tp_live[i].len;
        tp_live[i].p = NULL;
        tp_live_n--;
        tp_live_bytes -= len;
        /* Backward shift: the entries after the hole that probed past it move up. */
        j = i;
        for (;;) {
            size_t home;
            j = (j + 1) & (tp_live_cap - 1);
            if (tp_live[j].p == NULL) break;
            home = tp_hash(tp_live[j].p, tp_live_cap);
            if (((j - home) & (tp_live_cap - 1)) >= ((j - i) & (tp_live_cap - 1))) {
                tp_live[i] = tp_live[j];
                tp_live[j].p = NULL;
                i = j;
            }
        }
        return len;
    }

    /* A buffer of `size` bytes (>= TP_MIN) from the pool, else a fresh mapping;
       *reused says which (a fresh mapping is zeroed by the kernel).  NULL when
       neither can be had. */
    static void *tp_get(size_t size, int *reused) {
        size_t len;
        int c = tp_class(size, &len);
        void *p = NULL;
        pthread_mutex_lock(&tp_lock);
        if (c < TP_CLASSES && tp_cache[c].n) {
            uintptr_t item = (uintptr_t)tp_cache[c].items[--tp_cache[c].n];
            if (item & 1) tp_lazy_bytes -= len; else tp_resident_bytes -= len;
            p = (void *)(item & ~(uintptr_t)1);
            tp_reused++;
        }
        pthread_mutex_unlock(&tp_lock);
        *reused = p != NULL;
        if (p == NULL) {
            p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return NULL;
        }
        pthread_mutex_lock(&tp_lock);
        if (tp_live_add(p, len) < 0) {
            pthread_mutex_unlock(&tp_lock);
            munmap(p, len);
            return NULL;
        }
        if (!*reused) tp_mapped++;
        pthread_mutex_unlock(&tp_lock);
        return p;
    }

    /* The pool's buffer `p` of `len` bytes, no longer used: cached (resident or
       lazily) when its class has room under the limits, else unmapped. */
    static void tp_put(void *p, size_t len) {
        size_t cls_len;
        int c = len >= TP_MIN ? tp_class(len, &cls_len) : -1;
        int keep = 0, lazy = 0;
        if (c >= 0 && c < TP_CLASSES && cls_len == len) {
            pthread_mutex_lock(&tp_lock);
            /* Reserved now, while the pages may be advised without the lock. */
            if (tp_limit == 0) {
                /* the pool is off: nothing kept */
            } else if (tp_resident_bytes + len <= tp_limit) {
                tp_resident_bytes += len;
                keep = 1;
            } else if (tp_lazy_bytes + len <= tp_lazy_limit) {
                tp_lazy_bytes += len;
                keep = lazy = 1;
            }
            pthread_mutex_unlock(&tp_lock);
        }
        /* Advised before anyone else can take it: a write by the next owner must
           come after MADV_FREE, or the kernel could drop what it wrote. */
        if (lazy && madvise(p, len, MADV_FREE) != 0) {
            pthread_mutex_lock(&tp_lock);
            tp_lazy_bytes -= len;
            pthread_mutex_unlock(&tp_lock);
            keep = 0;
        }
        if (keep) {
            tp_stack *s = &tp_cache[c];
            pthread_mutex_lock(&tp_lock);
            if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 16;
                void **items = (void **)realloc(s->items, cap * sizeof(void *));
                if (items == NULL) {
                    keep = 0;
                } else {
                    s->items = items;
                    s->cap = cap;
                }
            }
            if (keep) {
                s->items[s->n++] = (void *)((uintptr_t)p | (uintptr_t)lazy);
            } else if (lazy) {
                tp_lazy_bytes -= len;
            } else {
                tp_resident_bytes -= len;
            }
            pthread_mutex_unlock(&tp_lock);
        }
        if (!keep) munmap(p, len);
    }

    /* Unmap cached buffers until the resident and the lazy ones are within the
       limits (whole stacks' tops, so a few more may go than needed). */
    static void tp_trim(void) {
        for (;;) {
            void *p = NULL;
            size_t len = 0;
            int c;
            pthread_mutex_lock(&tp_lock);
            if (tp_resident_bytes > tp_limit || tp_lazy_bytes > tp_lazy_limit
                    || (tp_limit == 0 && tp_lazy_bytes)) {
                /* The biggest classes first: fewest calls for the most memory. */
                for (c = TP_CLASSES - 1; c >= 0; c--) {
                    if (tp_cache[c].n) {
                        size_t b = (size_t)(c / 8) + 15, k = (size_t)(c % 8) + 1;
                        uintptr_t item = (uintptr_t)tp_cache[c].items[--tp_cache[c].n];
                        len = ((size_t)1 << b) + k * ((size_t)1 << (b - 3));
                        if (item & 1) tp_lazy_bytes -= len; else tp_resident_bytes -= len;
                        p = (void *)(item & ~(uintptr_t)1);
                        break;
                    }
                }
            }
            pthread_mutex_unlock(&tp_lock);
            if (p == NULL) return;
            munmap(p, len);
        }
    }

    static void *tp_malloc(void *ctx, size_t size) {
        int reused;
        void *p;
        if (size < TP_MIN) return tp_default.malloc(tp_default.ctx, size);
        p = tp_get(size, &reused);
        return p != NULL ? p : tp_default.malloc(tp_default.ctx, size);
    }

    static void *tp_calloc(void *ctx, size_t nelem, size_t elsize) {
        size_t size;
        int reused;
        void *p;
        if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
        size = nelem * elsize;
        if (size < TP_MIN) return tp_default.calloc(tp_default.ctx, nelem, elsize);
        p = tp_get(size, &reused);
        if (p == NULL) return tp_default.calloc(tp_default.ctx, nelem, elsize);
        /* A reused buffer holds an earlier array's bytes (or zero pages, where the
           kernel took them back); a fresh mapping is zero already. */
        if (reused) memset(p, 0, size);
        return p;
    }

    static void *tp_realloc(void *ctx, void *ptr, size_t new_size) {
        size_t len, new_len;
        void *q;
        pthread_mutex_lock(&tp_lock);
        len = tp_live_take(ptr);
        pthread_mutex_unlock(&tp_lock);
        if (len == 0) return tp_default.realloc(tp_default.ctx, ptr, new_size);
        /* The pool's buffer stays a mapping: resized in place or moved by the
           kernel (page tables, not bytes). */
        if (new_size >= TP_MIN) {
            (void)tp_class(new_size, &new_len);
        } else {
            new_len = ((new_size ? new_size : 1) + tp_page - 1) & ~(tp_page - 1);
        }
        q = new_len == len ? ptr : mremap(ptr, len, new_len, MREMAP_MAYMOVE);
        pthread_mutex_lock(&tp_lock);
        if (q == MAP_FAILED) {
            /* realloc's contract: NULL, and `ptr` unchanged (still the pool's).
               Its slot was just freed, so this add cannot need to grow the table. */
            (void)tp_live_add(ptr, len);
            pthread_mutex_unlock(&tp_lock);
            return NULL;
        }
        (void)tp_live_add(q, new_len);
        pthread_mutex_unlock(&tp_lock);
        return q;
    }

    static void tp_free(void *ctx, void *ptr, size_t size) {
        size_t len;
        pthread_mutex_lock(&tp_lock);
        len = tp_live_take(ptr);
        pthread_mutex_unlock(&tp_lock);
        if (len == 0) {
            tp_default.free(tp_default.ctx, ptr, size);
            return;
        }
        tp_put(ptr, len);
    }

    static PyDataMem_Handler tp_handler = {
        "tracer_array_pool", 1, {NULL, tp_malloc, tp_calloc, tp_realloc, tp_free}
    };

    static int tp_setup(PyObject *default_capsule) {
        PyDataMem_Handler *d = (PyDataMem_Handler *)PyCapsule_GetPointer(
            default_capsule, "mem_handler");
        long page = sysconf(_SC_PAGESIZE);
        if (d == NULL) return -1;
        tp_default = d->allocator;
        if (page > 0) tp_page = (size_t)page;
        memset(tp_cache, 0, sizeof(tp_cache));
        /* A fork while another thread holds the lock must not leave the child's
           pool locked forever. */
        return pthread_atfork(tp_lock_prepare, tp_lock_release, tp_lock_release) == 0 ? 0 : -1;
    }
    #define TP_AVAILABLE 1
    #else
    static PyDataMem_Handler tp_handler;
    static int tp_setup(PyObject *default_capsule) { (void)default_capsule; return 0; }
    static void tp_trim(void) {}
    #define TP_AVAILABLE 0
    #endif

    /* Sets a limit (`lazy`: the lazy one) and frees what is kept beyond;
       returns the old one. */
    static size_t tp_set_limit(size_t limit, int lazy) {
        size_t old;
        pthread_mutex_lock(&tp_lock);
        if (lazy) { old = tp_lazy_limit; tp_lazy_limit = limit; }
        else { old = tp_limit; tp_limit = limit; }
        pthread_mutex_unlock(&tp_lock);
        tp_trim();
        return old;
    }
    static size_t tp_get_limit(int lazy) { return lazy ? tp_lazy_limit : tp_limit; }

    /* (resident bytes, lazy bytes, live bytes, live buffers, buffers reused,
       fresh mappings). */
    static void tp_counts(size_t *out) {
        pthread_mutex_lock(&tp_lock);
        out[0] = tp_resident_bytes; out[1] = tp_lazy_bytes;
        out[2] = tp_live_bytes; out[3] = tp_live_n;
        out[4] = tp_reused; out[5] = tp_mapped;
        pthread_mutex_unlock(&tp_lock);
    }
    """
    ctypedef struct PyDataMem_Handler:
        pass
    PyDataMem_Handler tp_handler
    bint TP_AVAILABLE
    size_t TP_MIN
    int tp_setup(PyObject *default_capsule) noexcept
    size_t tp_set_limit(size_t limit, int lazy) noexcept nogil
    size_t tp_get_limit(int lazy) noexcept
    void tp_counts(size_t *out) noexcept

from cpython.pycapsule cimport PyCapsule_New

_import_array()

if tp_setup(PyDataMem_DefaultHandler) != 0:
    raise ImportError("tracer._arraypool: numpy's default memory handler could not be read")

cdef object DEFAULT = <object>PyDataMem_DefaultHandler
# The pool's handler as numpy takes it: a "mem_handler" capsule each array made
# under it holds a reference to (it lives as long as this module, i.e. forever).
cdef object HANDLER = PyCapsule_New(&tp_handler, b"mem_handler", NULL)

#: The name numpy reports for arrays made under the pool's handler
#: (`numpy.core.multiarray.get_handler_name(array)`).
HANDLER_NAME = "tracer_array_pool"
#: Buffers of this many bytes and more are the pool's; smaller ones numpy's default handler's.
MIN_BYTES = TP_MIN
#: Whether this platform has the pool (Linux); elsewhere `enter` installs nothing.
AVAILABLE = bool(TP_AVAILABLE)


def enter():
    """Make numpy allocate through the pool in the calling context; returns what to
    hand `leave` afterwards, or None when nothing was installed.

    Nothing is installed when the pool is off (`array_buffer_cache_limit(0)`),
    unavailable, or when the context's handler is not numpy's default (one the program set itself,
    or the pool's already: a nested traced call).
    """
    if not TP_AVAILABLE or tp_get_limit(0) == 0:
        return None
    if PyDataMem_GetHandler() is not DEFAULT:
        return None
    return PyDataMem_SetHandler(HANDLER)


def leave(previous):
    """Put back the handler `enter` replaced (`previous`, what it returned), unless
    the program set another one since."""
    if previous is not None and PyDataMem_GetHandler() is HANDLER:
        PyDataMem_SetHandler(previous)


cdef object _set_limit(object limit, int lazy):
    if limit is None:
        return tp_get_limit(lazy)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise TypeError(f"the limit is a number of bytes (an int >= 0), not {limit!r}")
    cdef size_t n = min(limit, PY_SSIZE_T_MAX)
    with nogil:
        n = tp_set_limit(n, lazy)
    return n


def array_buffer_cache_limit(limit=None):
    """Get or set how many bytes of numpy array buffers freed by traced calls are
    kept resident for the next traced call (values="keep"; default 64 MiB).

    Numpy's buffers of 64 KiB and more made inside a traced call come from this
    cache when it holds one of their size, so a program tracing a model in a loop
    writes its arrays into memory the last trace freed instead of faulting in
    fresh pages.  Returns the limit in force before the call; ``0`` keeps none,
    frees what is kept, and turns the pool off for calls traced from then on
    (numpy then allocates with its own handler in traced calls too).
    """
    return _set_limit(limit, 0)


def array_buffer_cache_lazy_limit(limit=None):
    """Get or set how many bytes of freed array buffers are kept beyond
    `array_buffer_cache_limit`, given back to the kernel lazily (Linux's
    MADV_FREE: it takes the pages whenever it needs memory; until then the next
    traced call writes into pages already there).  Default 1 GiB; returns the
    limit in force before the call; ``0`` keeps no such buffers and frees the ones
    kept now."""
    return _set_limit(limit, 1)


def array_buffer_cache_bytes():
    """Bytes of freed array buffers kept now for the next traced call (resident and
    lazily given back)."""
    cdef size_t c[6]
    tp_counts(c)
    return c[0] + c[1]


def counts():
    """A dict of the pool's counters: `resident_bytes` and `lazy_bytes` (freed
    buffers kept), `live_bytes` and `live` (buffers of arrays alive now), `reused`
    (allocations served from the cache) and `mapped` (fresh mappings made), since
    the start."""
    cdef size_t c[6]
    tp_counts(c)
    return {"resident_bytes": c[0], "lazy_bytes": c[1], "live_bytes": c[2], "live": c[3],
            "reused": c[4], "mapped": c[5]}
