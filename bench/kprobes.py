#!/usr/bin/env python3
"""kprobes benchmark: boots the in-kernel test build on QEMU virt -smp 4
with `ktest=kprobe-bench` several times and prints the median of each
figure the kernel reports (kernel/src/kprobes/bench.rs): the raw BRK
exception round trip, a kprobe hit on a simulated instruction (NOP) and on
one stepped out of line (ADD), a kretprobe hit (entry + return), and
register_kprobe + unregister_kprobe with 4 CPUs online; then each hit as a
ratio to the BRK round trip. Figures, not a pass/fail test.

usage: bench/kprobes.py [--runs N]
"""
import os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = ["brk_roundtrip", "simulated_hit", "stepped_hit", "kretprobe_hit", "register_unregister"]


def one_run(image):
    out = subprocess.run(
        [os.path.join(ROOT, "scripts/qemu-run.sh"), "--test", "--kernel", image, "--machine", "virt",
         "--smp", "4", "--append", "ktest=kprobe-bench", "--timeout", "120"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout
    got = {}
    for m in re.finditer(r"kprobe-bench: (\w+) (\d+) ns", out):
        got[m.group(1)] = int(m.group(2))
    missing = [f for f in FIGURES if f not in got]
    if missing:
        sys.exit(f"kprobes bench: no figure for {', '.join(missing)}; console output:\n{out}")
    return got


def main():
    runs = 5
    if len(sys.argv) == 3 and sys.argv[1] == "--runs":
        runs = int(sys.argv[2])
    subprocess.run([os.path.join(ROOT, "scripts/setup.sh")], check=True, stdout=subprocess.DEVNULL)
    image = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild", "--", "--test"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.strip()
    print(f"kprobes benchmark: virt -smp 4, {runs} boots, image {os.path.relpath(image, ROOT)}")
    samples = {f: [] for f in FIGURES}
    for _ in range(runs):
        for f, v in one_run(image).items():
            if f in samples:
                samples[f].append(v)
    med = {f: statistics.median(v) for f, v in samples.items()}
    for f in FIGURES:
        v = samples[f]
        print(f"{f:<22} median {med[f]:>10.0f} ns   (min {min(v)}, max {max(v)})")
    brk = med["brk_roundtrip"]
    for f, target in (("simulated_hit", 1.5), ("stepped_hit", 2.5), ("kretprobe_hit", None)):
        goal = f"   (target <= {target}x)" if target else ""
        print(f"{f:<22} {med[f] / brk:.2f}x brk{goal}")


if __name__ == "__main__":
    main()
