#!/usr/bin/env python3
"""Debian-program benchmark: bench/debianbench.c, built dynamically with
aarch64-linux-gnu-gcc against glibc, measures clock_gettime(CLOCK_MONOTONIC)
through glibc's vDSO path, getpid, a 4 KiB read of a cached file,
mmap+touch+munmap of 1 MiB, fork+exec+wait of Debian's dynamically linked
/usr/bin/true and the start of Debian's `bash -c true`, with Debian's libc6,
bash and coreutils unpacked at / (scripts/setup.sh --print-debian). It runs
on this kernel and on real Linux (../shared/reflinux/run.sh) under the same
QEMU (cortex-a72), alternating boots so that both see the same host load,
and prints the medians with ours/Linux. Figures, not a pass/fail test.

usage: bench/debian.py [--runs N] [--smp N] [--kernel IMAGE]
"""
import os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFLINUX = os.path.join(os.path.dirname(ROOT), "shared", "reflinux", "run.sh")
ORDER = ["clock_gettime", "getpid", "read_4k", "mmap_touch_1m", "fork_exec_true", "bash_c_true"]
COMMANDS = "busybox tar -xf /bin/debian.tar -C / && /bin/debianbench"


def parse(out):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^bench: (\S+) ([0-9.]+) ns$", out, re.M)}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    got = parse(p.stdout)
    if p.returncode != 0 or set(got) != set(ORDER):
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout}\n{p.stderr[-2000:]}")
    return got


def setup(flag):
    p = subprocess.run([os.path.join(ROOT, "scripts/setup.sh"), flag], capture_output=True, text=True, check=True)
    return p.stdout.strip()


def main():
    runs, smp, kernel = 3, 4, None
    args = sys.argv[1:]
    while args:
        if args[0] == "--runs":
            runs = int(args[1]); args = args[2:]
        elif args[0] == "--smp":
            smp = int(args[1]); args = args[2:]
        elif args[0] == "--kernel":
            kernel = args[1]; args = args[2:]
        else:
            sys.exit(__doc__)
    if kernel is None:
        subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        kernel = os.path.join(ROOT, "target/kernel/kernel8.img")
    out_dir = os.path.join(ROOT, "target", "bench")
    os.makedirs(out_dir, exist_ok=True)
    prog = os.path.join(out_dir, "debianbench")
    subprocess.run(["aarch64-linux-gnu-gcc", "-O2", "-Wall", "-o", prog, os.path.join(ROOT, "bench/debianbench.c")],
                   check=True)
    files = [setup("--print-busybox"), setup("--print-debian"), prog]
    ours, linux = [], []
    for _ in range(runs):
        ours.append(run([os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", kernel, "--smp", str(smp),
                         "--cpu", "cortex-a72", "--timeout", "600", *files, "--", COMMANDS]))
        if os.path.exists(REFLINUX):
            linux.append(run([REFLINUX, "--smp", str(smp), "--timeout", "600", *files, "--", COMMANDS]))
    print(f"Debian-program benchmark, QEMU virt cortex-a72 -smp {smp}, median of {runs} alternating boots "
          "(ns per operation)")
    print(f"{'operation':<16} {'ours':>12} {'linux':>12} {'ours/linux':>11}")
    for n in ORDER:
        o = statistics.median(r[n] for r in ours)
        if linux:
            l = statistics.median(r[n] for r in linux)
            print(f"{n:<16} {o:>12.1f} {l:>12.1f} {o / l:>11.2f}")
        else:
            print(f"{n:<16} {o:>12.1f} {'-':>12} {'-':>11}")
    if not linux:
        print("(../shared/reflinux/run.sh not found: no Linux figures)")


if __name__ == "__main__":
    main()
