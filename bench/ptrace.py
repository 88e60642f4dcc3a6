#!/usr/bin/env python3
"""ptrace benchmark (issue 10 part 5): runs `ptracebench`
(userland/ptrace-tools) on this kernel and on real Linux 6.12
(../shared/reflinux), alternating boots for N rounds, and prints the median
of each figure per side with the ratio this kernel / Linux (target: at most
0.5).

Figures (ns per operation, each the median of 5 runs of ITERATIONS in one
boot): a syscall-stop pair (PTRACE_SYSCALL + wait4 to a traced getpid's
entry stop and again to its exit stop), one PTRACE_PEEKDATA, one 4 KiB
process_vm_readv, one PTRACE_SINGLESTEP + wait4 (n/a on a kernel that
refuses it with EIO).

`--icount` runs both QEMUs with `-icount shift=0`: the guest's clock then
counts instructions (1 ns each), so every figure is an instruction count per
operation, the same on a loaded host as on a quiet one (on -smp 2 and more
the other CPUs' instructions count too, idle ones included; the run starts
5 s after boot, when Linux's own start-up work is done). Without it the
figures are wall-clock time, which other work on the host distorts.

A side that fails (boot failure, missing reflinux, a failed request) shows
n/a; the script still prints the other side. Figures, not a pass/fail test.

usage: bench/ptrace.py [--rounds N] [--smp N] [--iterations N] [--icount]
"""
import argparse, os, re, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracing import use_icount  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFLINUX = os.path.join(ROOT, "..", "shared", "reflinux", "run.sh")
FIGURES = ["syscall_stop_pair", "peekdata", "process_vm_readv_4k", "singlestep"]
TARGET = 0.5


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        return 124, out.decode(errors="replace") if isinstance(out, bytes) else out


def figures(out):
    """The figures a run printed (None for `n/a`); None if it failed."""
    got = {}
    for m in re.finditer(r"^ptracebench: (\w+) (?:(\d+) ns|n/a)$", out, re.M):
        got[m.group(1)] = int(m.group(2)) if m.group(2) else None
    return got if all(f in got for f in FIGURES) else None


def one_side(name, cmd, timeout):
    rc, out = run(cmd, timeout)
    got = figures(out)
    if got is None:
        last = [l for l in out.splitlines() if l.strip()][-3:]
        print(f"  {name}: no figures (exit {rc}){': ' + ' | '.join(last) if last else ''}", file=sys.stderr)
    return got


def build():
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="0")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "ptrace-tools", "--target",
                    "aarch64-unknown-none", "--target-dir", "target/user"], cwd=ROOT, env=env, check=True)
    bench = os.path.join(ROOT, "target/user/aarch64-unknown-none/release/ptracebench")
    p = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild"], cwd=ROOT, capture_output=True,
                       text=True)
    image = p.stdout.strip() if p.returncode == 0 else None
    if image is None:
        print("ptrace bench: building the kernel image failed; that side is n/a", file=sys.stderr)
    return bench, image


def med(v):
    return statistics.median(v) if v else None


def fmt(v):
    return "n/a" if v is None else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--icount", action="store_true", help="count instructions (-icount shift=0)")
    args = ap.parse_args()
    if args.icount:
        use_icount("ptrace-bench-")
    bench, image = build()
    cmd = f"ptracebench {args.iterations}"
    if args.icount:
        # Linux's boot leaves work behind (kworkers) for a few seconds,
        # which would count against the first figures; let it finish.
        cmd = f"sleep 5; {cmd}"
    sides = {
        "kernel": [os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", image or "/nonexistent",
                   "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
        "linux": [REFLINUX, "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
    }
    samples = {s: {f: [] for f in FIGURES} for s in sides}
    unit = "instructions/op (icount)" if args.icount else "ns/op, wall-clock"
    print(f"ptrace benchmark: {args.rounds} rounds, -smp {args.smp}, {cmd}, {unit}")
    for r in range(args.rounds):
        order = ["kernel", "linux"] if r % 2 == 0 else ["linux", "kernel"]
        for side in order:
            if side == "kernel" and not image:
                continue
            if side == "linux" and not os.access(REFLINUX, os.X_OK):
                continue
            got = one_side(side, sides[side], 1000)
            print(f"  round {r + 1} {side}: {'ok' if got else 'n/a'}", file=sys.stderr)
            for f, v in (got or {}).items():
                if f in FIGURES and v is not None:
                    samples[side][f].append(v)
    k = {f: med(samples["kernel"][f]) for f in FIGURES}
    lx = {f: med(samples["linux"][f]) for f in FIGURES}
    print(f"{'figure (median)':<28} {'this kernel':>12} {'Linux':>12} {'ratio':>7}  target")
    for f in FIGURES:
        ratio = f"{k[f] / lx[f]:.2f}" if k[f] is not None and lx[f] else "n/a"
        print(f"{f:<28} {fmt(k[f]):>12} {fmt(lx[f]):>12} {ratio:>7}  <= {TARGET:.2f}")


if __name__ == "__main__":
    main()
