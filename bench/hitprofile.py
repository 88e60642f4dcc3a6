#!/usr/bin/env python3
"""Instruction profile of one ftrace-based probe hit, from a QEMU log.

Boot with QEMU's `-d exec,in_asm,nochain -D LOG -dfilter
0xffffffff80000000..0xffffffff81000000` (a shim first in PATH adding them,
as bench/tracing.py's use_icount adds -icount), enable a `p:` event on
FUNC, call FUNC a few dozen times, then:

    bench/hitprofile.py LOG target/kernel/System.map FUNC [x]

Every hit is the run of translated blocks from `ftrace_caller` to FUNC+8
(the instruction after the site's `bl`); prints each hit's instruction
count, the instructions per function of a late hit, and with `x` that
hit's instructions one by one. Counts are exact (nochain logs every block
executed); a block's instructions come from its in_asm listing.

It also counts, in that hit, what QEMU's TCG makes expensive (price them
with the ktest build's `ktest=tcg-cost`): how each translated block is
left (an indirect branch, RET/BLR/BR, and a direct branch or fall-through
to another 4 KiB page than the block's start both go through QEMU's
lookup of the next block; a direct branch within the page is chained),
exclusive loads/stores (LDXR/STXR... and LSE atomics), barriers
(DMB/DSB/ISB), acquire/release loads/stores, and MRS/MSR by register.

Where QEMU's own time goes is another question: run QEMU under
`perf record` (a shim as above) for `ftracebench --only getpid` and for
`--only getpid_kprobe_entry` with the same --calls, and compare samples
per DSO and symbol. On 2026-11-26 (-smp 1) the difference was 58% in
translated code ([JIT]: the hit's instruction count), 7%
helper_lookup_tb_ptr (block exits through the lookup), and ~13% the one
CNTVCT_EL0 read (helper_access_check_cp_reg's hash lookup, the BQL the
I/O register takes, the host's clock_gettime). QEMU's `-perfmap` names
each guest instruction (`guest-0xADDR`), so perf also prices them one by
one: on 2026-11-27 the translated code's time went mostly to loads and
stores (2-3.5 ns each, a softmmu TLB look-up apiece, against well under
1 ns for an ALU instruction), hence the `memory accesses` count printed
below.
"""
import re, sys, bisect, collections
log, smap, fname = sys.argv[1], sys.argv[2], sys.argv[3]
syms = []
for l in open(smap):
    p = l.split()
    if len(p) >= 3 and p[1] in 'tTwW': syms.append((int(p[0], 16), p[2]))
syms.sort(); addrs = [a for a, _ in syms]
def sym(pc):
    i = bisect.bisect_right(addrs, pc) - 1
    return syms[i][1] if i >= 0 else '?'
caller = [a for a, n in syms if n == 'ftrace_caller'][0]
ret = [a for a, n in syms if n == fname][0] + 8
tbs = {}; cur = None; hits = []; active = None
insn_re = re.compile(r'^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$')
with open(log, errors='replace') as f:
    for l in f:
        if l.startswith('IN:'):
            cur = []; continue
        if cur is not None:
            m = insn_re.match(l)
            if m:
                cur.append((int(m.group(1), 16), m.group(3).strip())); continue
            if cur: tbs[cur[0][0]] = cur
            cur = None
        if l.startswith('Trace'):
            pc = int(l.split('/')[1], 16)
            if active is None:
                if pc != caller: continue
                active = []
            if pc == ret:
                hits.append(active); active = None; continue
            active.append(tbs.get(pc, [(pc, '?')]))
print("hits", len(hits), [sum(len(t) for t in h) for h in hits][-8:]); print("all", __import__("collections").Counter(sum(len(t) for t in h) for h in hits))
h = hits[int(__import__("os").environ.get("HIT", "-3"))]
per = collections.Counter(); ntb = 0
for t in h:
    ntb += 1
    for pc, txt in t: per[sym(pc)] += 1
print('TBs', ntb, 'insns', sum(per.values()))
for s, n in per.most_common(): print(f'{n:5} {s}')
if len(sys.argv) > 4:
    for t in h:
        for pc, txt in t: print(hex(pc), sym(pc)[-40:], txt)

PAGE = 4096
def target(txt):
    m = re.search(r'#(0x[0-9a-f]+)$', txt)
    return int(m.group(1), 16) if m else None
exits = collections.Counter(); ops = collections.Counter(); mem = 0
for i, t in enumerate(h):
    start = t[0][0]
    nxt = h[i + 1][0][0] if i + 1 < len(h) else ret
    pc, txt = t[-1]
    mn = txt.split()[0]
    if mn in ('ret', 'blr', 'br', 'braa', 'blraa', 'retaa', 'eret'):
        exits['indirect ' + mn] += 1
    elif nxt // PAGE != start // PAGE:
        exits['direct/fall-through to another page (lookup)'] += 1
    else:
        exits['chained within the page'] += 1
    for pc, txt in t:
        f = txt.replace(',', ' ').split()
        mn = f[0]
        if re.match(r'(ld|st)', mn): mem += 1
        if re.match(r'(ld|st)(a?)xr|(ld|st)(a?)xp|cas|swp|ld(add|clr|eor|set|smax|smin|umax|umin)', mn):
            ops['exclusive/atomic ' + mn] += 1
        elif mn in ('dmb', 'dsb', 'isb'):
            ops['barrier ' + ' '.join(f)] += 1
        elif re.match(r'ldar|stlr|ldapr', mn):
            ops['acquire/release ' + mn] += 1
        elif mn == 'mrs':
            ops['mrs ' + f[2]] += 1
        elif mn == 'msr':
            ops['msr ' + f[1]] += 1
pages = sorted({pc // PAGE for t in h for pc, _ in t})
print('block exits (TBs %d):' % ntb)
for k, n in exits.most_common(): print(f'{n:5} {k}')
print('expensive operations:')
for k, n in sorted(ops.items()): print(f'{n:5} {k}')
print('memory accesses', mem)
print('code pages', len(pages), ' '.join(hex(p * PAGE) for p in pages))
