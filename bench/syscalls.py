#!/usr/bin/env python3
"""System call benchmark: runs the userland `bench` program (getpid round
trip, fork+exit+wait, fork+exec+wait, pipe round trip) on this kernel and on
real Linux (../shared/reflinux/run.sh) under the same QEMU, alternating runs
so that both see the same host load, and prints each figure as our/Linux.
Figures, not a pass/fail test.

usage: bench/syscalls.py [--runs N] [--smp N]
"""
import os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFLINUX = os.path.join(os.path.dirname(ROOT), "shared", "reflinux", "run.sh")


def parse(out):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^bench: (\S+) ([0-9.]+) ns$", out, re.M)}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-2000:]}")
    return parse(p.stdout)


def main():
    runs, smp = 3, 4
    args = sys.argv[1:]
    while args:
        if args[0] == "--runs":
            runs = int(args[1]); args = args[2:]
        elif args[0] == "--smp":
            smp = int(args[1]); args = args[2:]
        else:
            sys.exit(__doc__)
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="0")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "proof", "--target", "aarch64-unknown-none",
                    "--target-dir", "target/user"], cwd=ROOT, check=True, env=env)
    bench = os.path.join(ROOT, "target/user/aarch64-unknown-none/release/bench")
    ours, linux = [], []
    for _ in range(runs):
        ours.append(run([os.path.join(ROOT, "scripts/qemu-run.sh"), "--smp", str(smp), bench, "--", "bench"]))
        if os.path.exists(REFLINUX):
            linux.append(run([REFLINUX, "--smp", str(smp), bench, "--", "bench"]))
    names = sorted(ours[0])
    print(f"syscall benchmark, QEMU virt -smp {smp}, median of {runs} runs (ns per operation)")
    print(f"{'operation':<18} {'ours':>10} {'linux':>10} {'ours/linux':>11}")
    for n in names:
        o = statistics.median(r[n] for r in ours)
        if linux:
            l = statistics.median(r[n] for r in linux)
            print(f"{n:<18} {o:>10.0f} {l:>10.0f} {o / l:>11.2f}")
        else:
            print(f"{n:<18} {o:>10.0f} {'-':>10} {'-':>11}")
    if not linux:
        print("(../shared/reflinux/run.sh not found: no Linux figures)")


if __name__ == "__main__":
    main()
