#!/usr/bin/env python3
"""ftrace, fprobe, tracepoint and hist-trigger benchmark: runs `ftracebench`
(userland/kprobetests) on this kernel and on real Linux 6.12
(../shared/reflinux), alternating boots for N rounds, and prints the median
of each figure per side, the extra cost over a plain getpid (or pipe round
trip), and the ratio of those extra costs, this kernel / Linux.

Targets (issues 11 and 12, part 6): the function tracer figures at most
Linux's; the entry `p:` probe (ftrace-based here, BRK-based on Linux) at
most 0.1 of Linux's; raw_syscalls, sched_switch and the hist trigger at
most Linux's. Debian's Linux has no fprobe events (CONFIG_FPROBE_EVENTS is
off), so those show n/a on its side. A figure a kernel refuses shows n/a.

The pingpong figures (a pipe round trip between two processes, without
and with `sched_switch` enabled) pin both processes to one CPU, so that a
round trip is two context switches on either kernel whatever `--smp` is
(unpinned, each kernel's placement and idle path decide how many switches
happen and what they cost, and sched_switch's few percent of a round trip
drowned in that: Linux's extra cost once came out negative); the echoing
child is forked once per figure, outside the timed runs, and each figure
is the median of 9 runs of `--calls`/4 round trips.

`--icount` runs both QEMUs with `-icount shift=0`: the guest's clock then
counts instructions (1 ns each), so every figure is an instruction count,
the same on a loaded host as on a quiet one (use it with `--smp 1`: with
more CPUs the other CPUs' instructions count too; the run starts 5 s after
boot, when Linux's own start-up work is done). Without it the figures are wall-clock time, which
other work on the host distorts.

`--nop-cost` compares instead the bare getpid of this kernel with two
baselines: the same kernel without ftrace patch sites (`kbuild
--no-trace-sites`, Linux without CONFIG_FUNCTION_TRACER), which prices all
sites as NOPs (target: under 2%), and without static-key sites (`kbuild
--no-tracepoints`, Linux without CONFIG_TRACEPOINTS), which prices every
tracepoint and latency-tracer hook while off (target: at most 1%). The
three images boot in turn, in alternating order, and each figure is the
median of the rounds: wall-clock time, or instructions with `--icount`.

usage: bench/ftrace.py [--rounds N] [--smp N] [--calls N] [--icount] [--nop-cost]
"""
import argparse, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracing import ROOT, REFLINUX, run, med, fmt, use_icount  # noqa: E402

FIGURES = ["getpid", "getpid_function_filtered", "getpid_function_all", "getpid_function_graph_filtered",
           "getpid_fprobe", "getpid_fprobe_return", "getpid_kprobe_entry", "getpid_raw_syscalls",
           "getpid_hist_sys_enter", "pingpong", "pingpong_sched_switch"]
TARGETS = {"getpid_kprobe_entry": 0.1}


def figures(out):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^ftracebench: (\w+) (\d+) ns$", out, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--icount", action="store_true", help="count instructions (-icount shift=0)")
    ap.add_argument("--nop-cost", action="store_true", help="this kernel against ones without ftrace sites and without tracepoints")
    args = ap.parse_args()
    if args.icount:
        use_icount("ftrace-bench-")
    subprocess.run([os.path.join(ROOT, "scripts/setup.sh")], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="0")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "kprobetests", "--target",
                    "aarch64-unknown-none", "--target-dir", "target/user"], cwd=ROOT, env=env, check=True)
    bench = os.path.join(ROOT, "target/user/aarch64-unknown-none/release/ftracebench")
    p = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild"], cwd=ROOT,
                       capture_output=True, text=True)
    image = p.stdout.strip() if p.returncode == 0 else None
    cmd = f"ftracebench --calls {args.calls}"
    if args.icount:
        # Linux's boot leaves work behind (kworkers) for a few seconds,
        # which counts against the first figures; let it finish.
        cmd = f"sleep 5; {cmd}"
    if args.nop_cost:
        return nop_cost(args, image, bench, cmd)
    sides = {
        "kernel": [os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", image or "/nonexistent",
                   "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
        "linux": [REFLINUX, "--tracefs", "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
    }
    samples = {s: {f: [] for f in FIGURES} for s in sides}
    print(f"ftrace benchmark: {args.rounds} rounds, -smp {args.smp}, {cmd}")
    for r in range(args.rounds):
        for side in (["kernel", "linux"] if r % 2 == 0 else ["linux", "kernel"]):
            if (side == "kernel" and not image) or (side == "linux" and not os.access(REFLINUX, os.X_OK)):
                continue
            rc, out = run(sides[side], 1000)
            got = figures(out)
            print(f"  round {r + 1} {side}: {len(got)} figures (exit {rc})", file=sys.stderr)
            for f, v in got.items():
                if f in samples[side]:
                    samples[side][f].append(v)
    k = {f: med(samples["kernel"][f]) for f in FIGURES}
    lx = {f: med(samples["linux"][f]) for f in FIGURES}
    print(f"{'figure (ns/op, median)':<34} {'this kernel':>11} {'Linux':>11} {'extra here':>11} "
          f"{'extra Linux':>11} {'ratio':>6}  target")
    for f in FIGURES:
        base = "pingpong" if f.startswith("pingpong") else "getpid"
        ek = k[f] - k[base] if f != base and k[f] is not None and k[base] is not None else None
        el = lx[f] - lx[base] if f != base and lx[f] is not None and lx[base] is not None else None
        ratio = f"{ek / el:.2f}" if ek is not None and el else "n/a"
        target = "" if f == base else f"<= {TARGETS.get(f, 1.0):.2f}"
        print(f"{f:<34} {fmt(k[f]):>11} {fmt(lx[f]):>11} {fmt(ek):>11} {fmt(el):>11} {ratio:>6}  {target}")


# The baselines of --nop-cost: kbuild flags, what the cost row measures.
BASELINES = [
    ("--no-trace-sites", "ftrace sites as NOPs", "< 2%"),
    ("--no-tracepoints", "tracepoints off", "<= 1%"),
]


def nop_cost(args, image, bench, cmd):
    images = {"full": image}
    for flag, _, _ in BASELINES:
        p = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild", "--", flag], cwd=ROOT,
                           capture_output=True, text=True)
        if p.returncode != 0 or not image:
            sys.exit(f"bench/ftrace.py: a kernel did not build:\n{p.stderr[-2000:]}")
        images[flag] = p.stdout.strip()
    got = {k: [] for k in images}
    unit = "instructions" if args.icount else "ns, wall-clock"
    print(f"off cost: {args.rounds} rounds, -smp {args.smp}, {cmd}, getpid per call in {unit}")
    for r in range(args.rounds):
        # Alternate the order, so that a slow spell of the host does not
        # always fall on the same image.
        for k in (list(images) if r % 2 == 0 else list(reversed(images))):
            rc, out = run([os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", images[k], "--smp", str(args.smp),
                           "--timeout", "900", bench, "--", cmd], 1000)
            v = figures(out).get("getpid")
            print(f"  round {r + 1} {k}: getpid {v} (exit {rc})", file=sys.stderr)
            if v is not None:
                got[k].append(v)
    full = med(got["full"])
    print(f"{'cost of (getpid, median)':<26} {'full':>9} {'without':>9} {'cost':>8}  target")
    for flag, what, target in BASELINES:
        base = med(got[flag])
        cost = f"{100 * (full - base) / base:+.2f}%" if full is not None and base else "n/a"
        print(f"{what:<26} {fmt(full):>9} {fmt(base):>9} {cost:>8}  {target} (baseline: kbuild {flag})")


if __name__ == "__main__":
    main()
