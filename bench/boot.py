#!/usr/bin/env python3
"""Boot-time benchmark: for QEMU virt -smp 4 and raspi4b, the time from
kernel entry to 'smp: Brought up' as the kernel measures it (its own
'boot: entry to smp up' line), and QEMU's wall time from start to that
line, over several runs. Figures, not a pass/fail test.

usage: bench/boot.py [--runs N]
"""
import os, re, signal, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_boot(image, machine):
    args = [os.path.join(ROOT, "scripts/qemu-run.sh"), "--kernel", image, "--machine", machine, "--timeout", "60"]
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         start_new_session=True, text=True)
    kernel_ms = wall_ms = None
    try:
        for line in p.stdout:
            m = re.search(r"boot: entry to smp up: ([0-9.]+) ms", line)
            if m:
                kernel_ms = float(m.group(1))
            if "smp: Brought up" in line and wall_ms is None:
                wall_ms = (time.monotonic() - t0) * 1000
            if kernel_ms is not None and wall_ms is not None:
                break
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait()
    return kernel_ms, wall_ms


def main():
    runs = 5
    if len(sys.argv) == 3 and sys.argv[1] == "--runs":
        runs = int(sys.argv[2])
    subprocess.run([os.path.join(ROOT, "scripts/setup.sh")], check=True)
    image = subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "kbuild"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.strip()
    print(f"boot benchmark: {runs} runs each, image {os.path.relpath(image, ROOT)}")
    print(f"{'config':<14} {'kernel entry->smp up (ms)':>28} {'QEMU start->smp line (ms)':>28}")
    for machine in ("virt", "raspi4b"):
        k, w = [], []
        for _ in range(runs):
            km, wm = one_boot(image, machine)
            if km is None or wm is None:
                print(f"{machine}: boot did not reach 'smp: Brought up'", file=sys.stderr)
                sys.exit(1)
            k.append(km)
            w.append(wm)
        name = "virt -smp 4" if machine == "virt" else "raspi4b"
        print(f"{name:<14} {'median %.1f (min %.1f, max %.1f)' % (statistics.median(k), min(k), max(k)):>28}"
              f" {'median %.0f (min %.0f, max %.0f)' % (statistics.median(w), min(w), max(w)):>28}")


if __name__ == "__main__":
    main()
