#!/usr/bin/env bash
# Runs every test: host unit and property tests of the CPU-free crates,
# then builds the kernel and the in-kernel test kernel and runs the QEMU
# tests in tests/ (in-kernel tests on virt -smp 1, virt -smp 4 and
# raspi4b; boot-log checks; a fatal oops). Installs what is missing first.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh

echo "== host tests" >&2
cargo test --quiet -p kallsyms -p devicetree -p kbuild -p ktest-macros

echo "== building the kernel images" >&2
KERNEL_IMAGE=$(cargo run --quiet --release -p kbuild)
KTEST_IMAGE=$(cargo run --quiet --release -p kbuild -- --test)
export KERNEL_IMAGE KTEST_IMAGE

echo "== QEMU tests" >&2
cargo test --quiet -p e2e -- --test-threads=2
