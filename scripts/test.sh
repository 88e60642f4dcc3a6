#!/usr/bin/env bash
# Runs the gates (rustfmt, clippy -D warnings) and every test: host unit and property tests of the CPU-free crates,
# then builds the kernel and the in-kernel test kernel and runs the QEMU
# tests in tests/ (in-kernel tests, boot logs, user commands on virt -smp 1,
# virt -smp 4 and raspi4b; a fatal oops), then the user programs on real
# Linux through ../shared/reflinux. Installs what is missing first.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh

# Gates first (fast, and they fail for reasons a test run would hide):
# formatting, and clippy with -D warnings over every crate as it is built
# (the kernel with and without the in-kernel tests, for the target).
echo "== gates: rustfmt, clippy" >&2
cargo fmt --check
host_crates=(-p kallsyms -p devicetree -p kbuild -p ktest-macros -p uapi -p signal-core -p process_core -p vfs -p exec -p cpio -p mkinitramfs -p insn -p trace-probe -p vdso -p trace-filter -p trace-hist -p ring-buffer -p btf -p vma -p strace-fmt)
cargo clippy --quiet --all-targets "${host_crates[@]}" -p e2e -- -D warnings
for features in "" ktest; do
    cargo clippy --quiet --release -p kernel --target aarch64-unknown-none-softfloat \
        --target-dir "target/${features:-kernel}" ${features:+--features "$features"} -- -D warnings
done
cargo clippy --quiet --release -p rt -p init -p sh -p utils -p usertests -p proof -p kprobetests -p ptracetests -p minigdb -p ptrace-tools -- -D warnings

echo "== host tests" >&2
cargo test --quiet "${host_crates[@]}"
# A million random and mutated kprobe_events definitions (about 12 s).
TRACE_PROBE_CASES=1000000 cargo test --quiet --release -p trace-probe random_and_mutated
# A million random and mutated event filters, 500 000 of each kind (about
# 35 s of CPU, 50 s on 2 shared cores).
TRACE_FILTER_CASES=500000 cargo test --quiet --release -p trace-filter --test fuzz filters_never_panic

echo "== building the kernel images" >&2
KERNEL_IMAGE=$(cargo run --quiet --release -p kbuild)
KTEST_IMAGE=$(cargo run --quiet --release -p kbuild -- --test)
export KERNEL_IMAGE KTEST_IMAGE

if [ ! -x ../shared/reflinux/run.sh ]; then
    echo "warning: ../shared/reflinux/run.sh not found: the comparisons with real Linux" \
        "are skipped (set REQUIRE_REFLINUX=1 to make that a failure)" >&2
fi

# The QEMU tests, two at a time and test by test (scripts/e2e.sh), with the
# user programs on real Linux (../shared/reflinux; skipped if absent) as one
# more job among them.
echo "== QEMU tests, and user programs on real Linux" >&2
scripts/e2e.sh --jobs 2 --with userland/test-on-linux.sh
