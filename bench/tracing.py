#!/usr/bin/env python3
"""Tracing benchmark: runs `kprobebench` (userland/kprobetests) on this
kernel and on real Linux 6.12 (../shared/reflinux), alternating boots for N
rounds, and prints the median of each figure per side with the ratio this
kernel / Linux (target: at most 0.7, issue 9 part 6).

Figures (ns per operation, each the median of 5 repetitions in one boot):
getpid with nothing enabled, with a `p:` event on `__arm64_sys_getpid`
enabled (`tracing_on` 1 and 0), with an `r:` event, with `%x0 %x1
+0(%sp):u64 $comm` fetchargs, and one define+enable+disable+remove cycle.
From them, the cost of an enabled `p:` hit (getpid_kprobe - getpid); on
this kernel, that hit against a raw BRK exception round trip, which the
in-kernel test build measures (`ktest=kprobe-bench`, bench/kprobes.py;
target: at most 2.5x).

A side that fails (no tracefs yet, boot failure, missing reflinux) shows
n/a; the script still prints the other side. Figures, not a pass/fail test.

usage: bench/tracing.py [--rounds N] [--smp N] [--calls N] [--cycles N] [--no-brk]
"""
import argparse, os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFLINUX = os.path.join(ROOT, "..", "shared", "reflinux", "run.sh")
FIGURES = ["getpid", "getpid_kprobe", "getpid_kprobe_tracing_off", "getpid_kretprobe",
           "getpid_kprobe_fetchargs", "probe_define_enable_disable_remove"]


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")


def figures(out):
    got = {m.group(1): int(m.group(2)) for m in re.finditer(r"^kprobebench: (\w+) (\d+) ns$", out, re.M)}
    return got if all(f in got for f in FIGURES) else None


def one_side(name, cmd, timeout):
    rc, out = run(cmd, timeout)
    got = figures(out)
    if got is None:
        last = [l for l in out.splitlines() if l.strip()][-3:]
        print(f"  {name}: no figures (exit {rc}){': ' + ' | '.join(last) if last else ''}", file=sys.stderr)
    return got


def build(args):
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="0")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "kprobetests", "--target",
                    "aarch64-unknown-none", "--target-dir", "target/user"], cwd=ROOT, env=env, check=True)
    bench = os.path.join(ROOT, "target/user/aarch64-unknown-none/release/kprobebench")
    images = {}
    for key, extra in (("kernel", []), ("ktest", ["--test"])):
        if key == "ktest" and args.no_brk:
            continue
        p = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild", "--"] + extra, cwd=ROOT,
                           capture_output=True, text=True)
        images[key] = p.stdout.strip() if p.returncode == 0 else None
        if p.returncode != 0:
            print(f"tracing bench: building the {key} image failed; that side is n/a", file=sys.stderr)
    return bench, images


def brk_roundtrip(image, smp):
    rc, out = run([os.path.join(ROOT, "scripts/qemu-run.sh"), "--test", "--kernel", image, "--smp", str(smp),
                   "--append", "ktest=kprobe-bench", "--timeout", "120"], 180)
    m = re.search(r"kprobe-bench: brk_roundtrip (\d+) ns", out)
    return int(m.group(1)) if m else None


def use_icount(prefix):
    """Makes every QEMU started from here on run with `-icount shift=0`
    (guest time counts instructions): both run.sh scripts call
    qemu-system-aarch64 by name, so a shim first in PATH adds the option."""
    import tempfile
    shim = tempfile.mkdtemp(prefix=prefix)
    real = subprocess.run(["sh", "-c", "command -v qemu-system-aarch64"], capture_output=True, text=True)
    with open(os.path.join(shim, "qemu-system-aarch64"), "w") as f:
        f.write(f'#!/bin/sh\nexec {real.stdout.strip()} "$@" -icount shift=0\n')
    os.chmod(os.path.join(shim, "qemu-system-aarch64"), 0o755)
    os.environ["PATH"] = shim + os.pathsep + os.environ["PATH"]


def med(v):
    return statistics.median(v) if v else None


def fmt(v):
    return "n/a" if v is None else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--no-brk", action="store_true", help="skip the BRK round trip boot")
    args = ap.parse_args()
    subprocess.run([os.path.join(ROOT, "scripts/setup.sh")], check=True, stdout=subprocess.DEVNULL)
    bench, images = build(args)
    cmd = f"kprobebench --calls {args.calls} --cycles {args.cycles}"
    sides = {
        "kernel": [os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", images.get("kernel") or "/nonexistent",
                   "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
        "linux": [REFLINUX, "--smp", str(args.smp), "--timeout", "900", bench, "--", cmd],
    }
    samples = {s: {f: [] for f in FIGURES} for s in sides}
    brk = []
    print(f"tracing benchmark: {args.rounds} rounds, -smp {args.smp}, {cmd}")
    for r in range(args.rounds):
        order = ["kernel", "linux"] if r % 2 == 0 else ["linux", "kernel"]
        for side in order:
            if side == "kernel" and not images.get("kernel"):
                continue
            if side == "linux" and not os.access(REFLINUX, os.X_OK):
                continue
            got = one_side(side, sides[side], 1000)
            print(f"  round {r + 1} {side}: {'ok' if got else 'n/a'}", file=sys.stderr)
            for f, v in (got or {}).items():
                if f in FIGURES:
                    samples[side][f].append(v)
        if images.get("ktest"):
            b = brk_roundtrip(images["ktest"], args.smp)
            if b:
                brk.append(b)
    k = {f: med(samples["kernel"][f]) for f in FIGURES}
    lx = {f: med(samples["linux"][f]) for f in FIGURES}
    for side in (k, lx):
        if side["getpid"] is not None and side["getpid_kprobe"] is not None:
            side["kprobe_hit"] = side["getpid_kprobe"] - side["getpid"]
        else:
            side["kprobe_hit"] = None
    print(f"{'figure (ns/op, median)':<38} {'this kernel':>12} {'Linux':>12} {'ratio':>7}  target")
    for f in FIGURES + ["kprobe_hit"]:
        ratio = f"{k[f] / lx[f]:.2f}" if k[f] is not None and lx[f] else "n/a"
        target = "" if f == "getpid" else "<= 0.70"
        print(f"{f:<38} {fmt(k[f]):>12} {fmt(lx[f]):>12} {ratio:>7}  {target}")
    b = med(brk)
    hit = k["kprobe_hit"]
    print(f"{'brk_roundtrip (ktest=kprobe-bench)':<38} {fmt(b):>12}")
    ratio = f"{hit / b:.2f}x" if hit is not None and b else "n/a"
    print(f"{'enabled p: hit / BRK round trip':<38} {ratio:>12}  target <= 2.5x")


if __name__ == "__main__":
    main()
