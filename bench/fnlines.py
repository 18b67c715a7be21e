"""Own instructions of one function by source line, from a callgrind output.

usage: cd src/tracer && python3 ../../bench/fnlines.py OUT FUNC DIVISOR [N] [_core.c]

OUT is a `valgrind --tool=callgrind --dump-instr=yes` output, FUNC a substring of
the function's name (e.g. _frame_entered: everything gcc inlined into it counts
there, at the source line it came from), DIVISOR the calls (bench/percall.py runs
a workload twice: 2 x its calls).  With _core.c given, its lines are folded to
the .pxi line that generated them.  Unlike callgrind_annotate's per-line counts,
a call's inclusive cost (the line after `calls=`) is not counted as the line's.
"""
import sys,re,collections
out,fsub,div=sys.argv[1],sys.argv[2],float(sys.argv[3]); N=int(sys.argv[4]) if len(sys.argv)>4 else 40
csrc=sys.argv[5] if len(sys.argv)>5 else None
names={'fl':{},'fn':{}}
def name(kind,v):
    m=re.match(r'\((\d+)\)(?: (.*))?',v)
    if not m: return v
    d=names['fl' if kind in('fl','fi','fe') else 'fn']
    if m.group(2) is not None: d[m.group(1)]=m.group(2)
    return d.get(m.group(1),'?')
cur_fl=cur_fi=None; cur_fn=None; addr=0; line=0; skip=False
agg=collections.Counter(); tot=0
for raw in open(out):
    raw=raw.rstrip('\n')
    if not raw: continue
    c=raw[0]
    if raw.startswith(('fl=','fi=','fe=')):
        k=raw[:2]; v=name(k,raw[3:])
        if k=='fl': cur_fl=v; cur_fi=v
        else: cur_fi=v
        continue
    if raw.startswith('fn='): cur_fn=name('fn',raw[3:]); cur_fi=cur_fl; continue
    if raw.startswith(('cfn=','cfi=','cfl=','cob=','ob=')):
        k=raw.split('=')[0]
        if k in('cfi','cfl'): name('fl',raw[4:])
        elif k=='cfn': name('fn',raw[4:])
        continue
    if raw.startswith('calls='): skip=True; continue
    if c.isdigit() or c in '+-*' or raw.startswith('0x'):
        parts=raw.split()
        def pos(tok,prev):
            if tok=='*': return prev
            if tok[0] in '+-': return prev+int(tok,0)
            return int(tok,0)
        addr=pos(parts[0],addr); line=pos(parts[1],line)
        ir=int(parts[2]) if len(parts)>2 else 0
        if skip: skip=False; continue
        if cur_fn and fsub in cur_fn:
            agg[(cur_fi,line)]+=ir; tot+=ir
print('own total', round(tot/div,1))
src=open(csrc).read().splitlines() if csrc else None
def pyx(n):
    for k in range(n-1, max(n-300,0), -1):
        s=src[k].strip()
        if s.startswith('/* "src/tracer/_core/'):
            j=k+1
            while '<<<<' not in src[j] and j<k+12: j+=1
            return s[18:45]+' '+src[j].strip()[2:80]
    return '?'
byk=collections.Counter()
for (f,l),v in agg.items():
    k=(pyx(l) if src and f.endswith('_core.c') else f.split('/')[-1]+':'+str(l))
    byk[k]+=v
for k,v in byk.most_common(N): print(f'{v/div:7.1f} {k}')
