# The structural pass of tracer.validate, in C: the same walk validate made in Python
# (a stack of calls, each call's children found by jumping over subtrees), with the
# checks that need only the columns.  A Python loop over 10^6 rows took 13x the time
# of recording them; this pass takes a few ms.  What needs objects (values, IRs) stays
# in tracer.views.validate, which this pass tells where to look: the first row of each
# distinct location (one IR lookup each), each row's location group, each call's last
# child and each row's first input row.


cdef inline uint64_t _mix(uint64_t a, uint64_t b) noexcept nogil:
    cdef uint64_t h = a * <uint64_t>0x9E3779B97F4A7C15 ^ (b + <uint64_t>0x632BE59BD9B4E019)
    h ^= h >> 31
    h *= <uint64_t>0xBF58476D1CE4E5B9
    return h ^ (h >> 29)


cdef class _KeySet:
    # Open addressing over (a, b) pairs of uint64: the index of each distinct pair,
    # in order of first sight.
    cdef uint64_t *a
    cdef uint64_t *b
    cdef int32_t *slot
    cdef Py_ssize_t cap, count

    def __cinit__(self):
        self.cap = 1024
        self.count = 0
        self.a = <uint64_t *>malloc(self.cap * sizeof(uint64_t))
        self.b = <uint64_t *>malloc(self.cap * sizeof(uint64_t))
        self.slot = <int32_t *>malloc(self.cap * sizeof(int32_t))
        if self.a == NULL or self.b == NULL or self.slot == NULL:
            raise MemoryError()
        memset(self.slot, 0xFF, self.cap * sizeof(int32_t))

    def __dealloc__(self):
        free(self.a)
        free(self.b)
        free(self.slot)

    cdef int32_t get(self, uint64_t a, uint64_t b) except -2:
        cdef Py_ssize_t mask = self.cap - 1
        cdef Py_ssize_t i = <Py_ssize_t>(_mix(a, b) & <uint64_t>mask)
        while self.slot[i] >= 0:
            if self.a[i] == a and self.b[i] == b:
                return self.slot[i]
            i = (i + 1) & mask
        self.a[i], self.b[i] = a, b
        self.slot[i] = <int32_t>self.count
        self.count += 1
        if self.count * 2 > self.cap:
            self._grow()
        return <int32_t>(self.count - 1)

    cdef int _grow(self) except -1:
        cdef Py_ssize_t old = self.cap, i, j, mask
        cdef uint64_t *oa = self.a
        cdef uint64_t *ob = self.b
        cdef int32_t *os = self.slot
        self.cap = old * 2
        mask = self.cap - 1
        self.a = <uint64_t *>malloc(self.cap * sizeof(uint64_t))
        self.b = <uint64_t *>malloc(self.cap * sizeof(uint64_t))
        self.slot = <int32_t *>malloc(self.cap * sizeof(int32_t))
        if self.a == NULL or self.b == NULL or self.slot == NULL:
            free(oa)
            free(ob)
            free(os)
            raise MemoryError()
        memset(self.slot, 0xFF, self.cap * sizeof(int32_t))
        for i in range(old):
            if os[i] >= 0:
                j = <Py_ssize_t>(_mix(oa[i], ob[i]) & <uint64_t>mask)
                while self.slot[j] >= 0:
                    j = (j + 1) & mask
                self.a[j], self.b[j], self.slot[j] = oa[i], ob[i], os[i]
        free(oa)
        free(ob)
        free(os)
        return 0


def lint_structure(Trace t, int32_t root, bint stopped):
    """The structural checks of `tracer.validate` on the subtree of `root`.

    Returns `(error, firsts, group, last, first_ref)`: `error` is None or the first
    violation met, `(what, row, *numbers)`; `firsts` lists the first row (in the walk's
    order) of each distinct location key (code, offset, kind, frame/carried flags, aux
    of a parameter or branch, whether the parent is row 0); `group[r]` is row r's key
    (-1 for rows not listed); `last[p]` is call p's last child (-1: none or not a
    call); `first_ref[r]` is r's first input row (-1: none).  Arrays are int32, one
    entry per row; when `error` is set they are partial.
    """
    np = _np()
    cdef int32_t n = t.n
    t._check(root)
    code_arr = np.ascontiguousarray(t._code_column(), dtype=np.int32)
    group_arr = np.full(n, -1, dtype=np.int32)
    last_arr = np.full(n, -1, dtype=np.int32)
    first_arr = np.full(n, -1, dtype=np.int32)
    cdef const int32_t[::1] code = code_arr
    cdef int32_t[::1] group = group_arr
    cdef int32_t[::1] last = last_arr
    cdef int32_t[::1] first_ref = first_arr
    cdef list firsts = []
    cdef _KeySet keys = _KeySet()
    cdef int32_t *stack = <int32_t *>malloc((n + 1) * sizeof(int32_t))
    if stack == NULL:
        raise MemoryError()
    cdef Py_ssize_t top = 0
    cdef int32_t p, end, pend, c, nxt, kind, expected, r, prev, g, aux
    cdef int32_t i
    cdef uint8_t flags
    cdef uint64_t ka, kb
    error = None
    try:
        stack[0] = root
        top = 1
        while top and error is None:
            top -= 1
            p = stack[top]
            end = t._end(p)
            if not (p < end <= n):
                error = ("end outside", p, end, n)
                break
            pend = t._end(t.parent_[p]) if t.parent_[p] >= 0 else n
            if end > pend:
                error = ("end beyond", p, end, pend)
                break
            c = p + 1
            expected = 0
            prev = -1
            while c < end:
                if t.parent_[c] != p:
                    error = ("listed", c, p, t.parent_[c])
                    break
                kind = t.kind_[c]
                if kind > K_RETURN:
                    error = ("kind", c, kind)
                    break
                for i in range(t.ref_start_[c], t.ref_start_[c + 1]):
                    r = t.refs_[i]
                    if r < 0:
                        continue
                    if r >= c:
                        error = ("later", c, r)
                        break
                    if t.parent_[r] != p:
                        error = ("other call", c, r, t.parent_[r], p)
                        break
                    if first_ref[c] < 0:
                        first_ref[c] = r
                if error is not None:
                    break
                flags = t.flags_[c]
                aux = t.aux_[c]
                if kind == 0 and not flags & F_CARRIED:
                    if aux != expected:
                        error = ("parameter", c, aux, expected)
                        break
                    expected += 1
                if flags & F_OPEN and not stopped:
                    error = ("open", c, kind)
                    break
                nxt = t._end(c)
                if kind == K_RETURN and nxt < end:
                    error = ("return not last", c)
                    break
                if nxt <= c:
                    # The jump would not advance (the walk in Python looped forever).
                    error = ("end outside", c, nxt, n)
                    break
                ka = (<uint64_t><uint32_t>code[c] << 32) | <uint64_t><uint32_t>t.offset_[c]
                kb = ((<uint64_t><uint32_t>(aux if kind == 0 or kind == 5 else 0) << 32)
                      | (<uint64_t>kind << 8) | (<uint64_t>(flags & (F_FRAME | F_CARRIED)) << 1)
                      | <uint64_t>(p == 0))
                g = keys.get(ka, kb)
                if g == len(firsts):
                    firsts.append(c)
                group[c] = g
                if kind == K_NESTED:
                    stack[top] = c
                    top += 1
                prev = c
                c = nxt
            last[p] = prev
    finally:
        free(stack)
    return error, np.array(firsts, dtype=np.int32), group_arr, last_arr, first_arr
