#!/usr/bin/env bash
# Builds the kernel and boots it under qemu-system-aarch64.
#
#   scripts/qemu-run.sh [--machine virt|raspi4b] [--smp N] [--mem SIZE]
#                       [--append 'BOOTARGS'] [--timeout SECONDS] [--gdb]
#                       [--test] [--kernel IMAGE] [--no-dtb]
#
# Defaults: virt, 4 CPUs, cortex-a72, 1G. Without --timeout the console is
# interactive (Ctrl-A X quits QEMU). With --timeout QEMU is stopped after
# that many seconds; the exit status is then 124, as with timeout(1).
# Otherwise the exit status is QEMU's: a test kernel (--test) ends QEMU
# through semihosting with 0 when every in-kernel test passed.
#
#   --test         boot the in-kernel test build (feature ktest)
#   --kernel IMG   boot IMG as is (no build)
#   --no-dtb       raspi4b only: pass no device tree (to see the kernel say so)
#   --gdb          start QEMU's gdb stub, halted; prints how to attach
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
machine=virt smp=4 mem=1G append="" timeout_s="" gdb=0 test=0 kernel="" no_dtb=0

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die() { echo "qemu-run: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --machine) machine=${2:?}; shift 2 ;;
        --machine=*) machine=${1#*=}; shift ;;
        --smp) smp=${2:?}; shift 2 ;;
        --smp=*) smp=${1#*=}; shift ;;
        --mem) mem=${2:?}; shift 2 ;;
        --mem=*) mem=${1#*=}; shift ;;
        --append) append=${2?}; shift 2 ;;
        --append=*) append=${1#*=}; shift ;;
        --timeout) timeout_s=${2:?}; shift 2 ;;
        --timeout=*) timeout_s=${1#*=}; shift ;;
        --gdb) gdb=1; shift ;;
        --test) test=1; shift ;;
        --kernel) kernel=${2:?}; shift 2 ;;
        --no-dtb) no_dtb=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage; die "unknown argument: $1" ;;
    esac
done
case "$machine" in virt|raspi4b) ;; *) die "--machine must be virt or raspi4b" ;; esac
[[ "$smp" =~ ^[1-8]$ ]] || die "--smp must be 1..8"
[ -z "$timeout_s" ] || [[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"

"$root/scripts/setup.sh" >&2

if [ -z "$kernel" ]; then
    build_args=()
    [ "$test" = 1 ] && build_args+=(--test)
    kernel=$(cd "$root" && cargo run --quiet --release -p kbuild -- "${build_args[@]}")
fi
[ -f "$kernel" ] || die "no kernel image at $kernel"

qemu=(qemu-system-aarch64 -nographic -no-reboot -semihosting-config enable=on,target=native)
case "$machine" in
    virt)
        qemu+=(-M virt -cpu cortex-a72 -smp "$smp" -m "$mem" -nic none) ;;
    raspi4b)
        # The board has 4 cores and fixed memory; QEMU makes no device tree.
        [ "$smp" = 4 ] || echo "qemu-run: raspi4b always has 4 CPUs; ignoring --smp $smp" >&2
        qemu+=(-M raspi4b)
        if [ "$no_dtb" = 0 ]; then
            qemu+=(-dtb "$("$root/scripts/setup.sh" --print-dtb)")
        fi ;;
esac
qemu+=(-kernel "$kernel")
[ -n "$append" ] && qemu+=(-append "$append")
if [ "$gdb" = 1 ]; then
    qemu+=(-s -S)
    elf="$(dirname "$kernel")/kernel.elf"
    echo "qemu-run: gdb stub on :1234, CPU halted. Attach with:" >&2
    echo "  gdb-multiarch $elf -ex 'target remote :1234'" >&2
fi

if [ -n "$timeout_s" ]; then
    set +e
    timeout --foreground -k 5 "$timeout_s" "${qemu[@]}" < /dev/null
    rc=$?
    set -e
    exit $rc
fi
exec "${qemu[@]}"
