#!/usr/bin/env python3
"""Profile of one PTRACE_SINGLESTEP + wait4 round trip, from a QEMU log.

    bench/stepprofile.py [--smp N] [--iterations N] [--image IMG] [--log LOG] [--keep] [-x]

Boots this kernel with `ptracebench N` (default 10) under QEMU's `-d
exec,in_asm,nochain,int -D LOG` (a shim first in PATH adds the options, as
bench/tracing.py's use_icount adds -icount), then cuts the log at every
entry of the kernel's single_step_handler: the blocks between two of them
are one round trip (the tracer's wait4 return, its next PTRACE_SINGLESTEP,
the tracee's step, the stop and the wake-up). For a late round trip it
prints, per CPU and in all: instructions, translated blocks (nochain: each
is a return to QEMU's main loop), exceptions taken (by kind) and returned,
and the instructions that cost far more than an ordinary one under TCG
(system-register writes by name, DAIF writes, TLB maintenance, ISB, DSB,
DMB, exclusive pairs, WFI), then the instructions per function. `-x` also
lists that round trip's instructions one by one. With `--log`, an existing
log is read instead of booting.

Counts are exact on -smp 1 (nochain logs every block executed); on -smp 2
and more the CPUs' lines interleave in the order QEMU wrote them, so a
round trip's cut is approximate by a few blocks at each end.
"""
import argparse, bisect, collections, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def boot(args, log):
    shim = tempfile.mkdtemp(prefix="stepprofile-")
    real = subprocess.run(["sh", "-c", "command -v qemu-system-aarch64"], capture_output=True, text=True)
    with open(os.path.join(shim, "qemu-system-aarch64"), "w") as f:
        f.write(f'#!/bin/sh\nexec {real.stdout.strip()} "$@" -d exec,in_asm,nochain,int -D {log}\n')
    os.chmod(os.path.join(shim, "qemu-system-aarch64"), 0o755)
    env = dict(os.environ, PATH=shim + os.pathsep + os.environ["PATH"], CARGO_PROFILE_RELEASE_DEBUG="0")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "ptrace-tools", "--target",
                    "aarch64-unknown-none", "--target-dir", "target/user"], cwd=ROOT, env=env, check=True)
    bench = os.path.join(ROOT, "target/user/aarch64-unknown-none/release/ptracebench")
    image = args.image or subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild"], cwd=ROOT,
                                         capture_output=True, text=True, check=True).stdout.strip()
    p = subprocess.run([os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", image, "--smp", str(args.smp),
                        "--timeout", "600", bench, "--", f"ptracebench {args.iterations}"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    print(p.stdout.strip())


def load_syms():
    syms = []
    for l in open(os.path.join(ROOT, "target/kernel/System.map")):
        p = l.split()
        if len(p) >= 3 and p[1] in "tTwW":
            syms.append((int(p[0], 16), p[2]))
    syms.sort()
    return syms


COSTLY = [
    ("msr", re.compile(r"^msr\s+(\w+)")),
    ("mrs", re.compile(r"^mrs\s+\w+,\s*(\w+)")),
    ("tlbi", re.compile(r"^tlbi\b")),
    ("isb", re.compile(r"^isb\b")),
    ("dsb", re.compile(r"^dsb\b")),
    ("dmb", re.compile(r"^dmb\b")),
    ("ldxr", re.compile(r"^ld[a]?xr")),
    ("stxr", re.compile(r"^st[l]?xr")),
    ("wfi", re.compile(r"^wf[ie]\b")),
    ("eret", re.compile(r"^eret\b")),
    ("svc", re.compile(r"^svc\b")),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--image")
    ap.add_argument("--log")
    ap.add_argument("--keep", action="store_true", help="keep the QEMU log")
    ap.add_argument("--handler", help="single_step_handler's address (a log of another build)")
    ap.add_argument("-x", action="store_true", help="list the instructions")
    ap.add_argument("--trip", type=int, default=4, help="which round trip, counted from the end (default 4)")
    args = ap.parse_args()
    log = args.log
    if not log:
        log = os.path.join(tempfile.mkdtemp(prefix="stepprofile-log-"), "qemu.log")
        boot(args, log)
    syms = load_syms()
    addrs = [a for a, _ in syms]

    def sym(pc):
        if pc < 0xffff000000000000:
            return "(user)"
        i = bisect.bisect_right(addrs, pc) - 1
        return syms[i][1] if i >= 0 else "?"

    handler = int(args.handler, 16) if args.handler else [a for a, n in syms if n.endswith("single_step_handler")][0]
    insn_re = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$")
    trace_re = re.compile(r"^Trace (\d+): \S+ \[[0-9a-f]+/([0-9a-f]+)/")
    exc_re = re.compile(r"^Taking exception (\d+) \[(\w+)\] on CPU (\d+)")
    tbs = {}
    cur = None
    trips = []
    active = None  # events of the round trip being collected
    with open(log, errors="replace") as f:
        for l in f:
            if l.startswith("IN:"):
                cur = []
                continue
            if cur is not None:
                m = insn_re.match(l)
                if m:
                    cur.append((int(m.group(1), 16), m.group(3).strip()))
                    continue
                if cur:
                    tbs[cur[0][0]] = cur
                cur = None
            m = trace_re.match(l)
            if m:
                cpu, pc = int(m.group(1)), int(m.group(2), 16)
                if pc == handler:
                    if active is not None:
                        trips.append(active)
                    active = []
                if active is not None:
                    active.append(("tb", cpu, tbs.get(pc, [(pc, "?")])))
                continue
            m = exc_re.match(l)
            if m and active is not None:
                active.append(("exc", int(m.group(3)), m.group(2)))
                continue
            if l.startswith("Exception return") and active is not None:
                active.append(("eret", -1, l.split(" to ")[1].split(" PC")[0].strip() if " to " in l else ""))
    # The singlestep figure is the last one measured: its round trips are
    # the last runs of handler entries; take one a few from the end (the
    # last is followed by the kill).
    print("round trips", len(trips), "instructions of the last 8:",
          [sum(len(e[2]) for e in t if e[0] == "tb") for t in trips[-8:]])
    # The tracee's loop is three instructions (mov, svc, b): a round trip
    # of each kind, the least of each over the last 30 (a timer interrupt
    # lands in some), and their mean, which is what ptracebench measures.
    counts = [sum(len(e[2]) for e in t if e[0] == "tb") for t in trips[-31:-1]]
    kinds = [min(counts[k::3]) for k in range(3)]
    print("least of each kind:", kinds, "mean", round(sum(kinds) / 3))
    t = trips[-args.trip]
    cpus = sorted({e[1] for e in t if e[0] == "tb"})
    for c in cpus + [None]:
        ev = [e for e in t if e[0] == "tb" and (c is None or e[1] == c)]
        n = sum(len(e[2]) for e in ev)
        costly = collections.Counter()
        for e in ev:
            for pc, txt in e[2]:
                for name, rx in COSTLY:
                    m = rx.match(txt)
                    if m:
                        costly[name + (" " + m.group(1) if m.groups() else "")] += 1
        print(f"== {'all CPUs' if c is None else f'CPU {c}'}: {n} instructions, {len(ev)} TBs")
        print("   " + ", ".join(f"{k} {v}" for k, v in sorted(costly.items())))
    exc = collections.Counter(e[2] for e in t if e[0] == "exc")
    ret = collections.Counter(e[2] for e in t if e[0] == "eret")
    print("exceptions taken:", dict(exc), " returns to:", dict(ret))
    per = collections.Counter()
    for e in t:
        if e[0] == "tb":
            for pc, txt in e[2]:
                per[(e[1], sym(pc))] += 1
    for (c, s), n in per.most_common():
        print(f"{n:5} cpu{c} {s}")
    if args.x:
        for e in t:
            if e[0] == "tb":
                for pc, txt in e[2]:
                    print(f"cpu{e[1]} {pc:#x} {sym(pc)[-50:]} {txt}")
            else:
                print(f"--- {e[0]} {e[2]} cpu{e[1]}")
    if args.keep or args.log:
        print("log:", log)
    else:
        os.unlink(log)


if __name__ == "__main__":
    main()
