#!/bin/bash
# scripts/ptrace-selftests.sh - Linux 6.12.117's ptrace and breakpoint
# selftests (tools/testing/selftests/ptrace/{get_syscall_info,peeksiginfo,
# vmaccess}, breakpoints/{breakpoint_test_arm64,step_after_suspend_test}
# and arm64/abi/ptrace), unmodified, built with `aarch64-linux-gnu-gcc
# -static` and the flags of their Makefiles, run in the guest and on
# ../shared/reflinux.  step_after_suspend_test runs with `-n` (no suspend:
# the single-step on every CPU only).  ptrace/get_set_sud is built with
# 6.12's include/uapi/linux/ptrace.h (newer than the cross libc's); it
# fails on both kernels alike: arm64 has no syscall user dispatch, whose
# requests answer EINVAL.
#
#   scripts/ptrace-selftests.sh build      build (once) and print the tar
#   scripts/ptrace-selftests.sh run here   run them on this kernel (virt,
#                                          smp 4, cortex-a72), raw output
#   scripts/ptrace-selftests.sh run linux  the same on reflinux (smp 4)
#   scripts/ptrace-selftests.sh table      both, then the verdict table
#                                          (as scripts/arm64-selftests.sh's)
#
# Sources: `scripts/ftracetest-fetch.sh --arm64` (Debian's
# linux-source-6.12); compiler: Debian's gcc-aarch64-linux-gnu (installed by
# scripts/setup.sh).  Output goes to .cache/ptrace-selftests/linux-6.12.117/.
#
# Environment: KERNEL=IMAGE boots that image here (default: build
# target/kernel/kernel8.img with kbuild).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/.cache/ptrace-selftests/linux-6.12.117"
# Named for its program list: a new list is a new tar (the cache is shared).
tarball="$out/ptracesel-7.tar"
cc=aarch64-linux-gnu-gcc

note() { echo "ptrace-selftests: $*" >&2; }
die() { echo "ptrace-selftests: error: $*" >&2; exit 1; }
guest_name=ptracesel.sh
# shellcheck source=scripts/lib/selftests.sh
. "$repo/scripts/lib/selftests.sh"

# What the guest runs (busybox sh), between the markers `summary` parses.
guest_script='cd /tmp 2>/dev/null || cd /
busybox tar -xf /bin/'"${tarball##*/}"' || exit 125
for t in ptracesel/*; do
    echo "=== ${t#ptracesel/}"
    case $t in
        */step_after_suspend_test) ./$t -n ;;
        *) ./$t ;;
    esac
    echo "=== rc $?"
done'

build() {
    [ -s "$tarball" ] && return 0
    command -v $cc >/dev/null 2>&1 ||
        die "$cc is missing: run scripts/setup.sh (it installs gcc-aarch64-linux-gnu and libc6-dev-arm64-cross)"
    local src st tmp khdr t
    src=$("$repo/scripts/ftracetest-fetch.sh" --arm64) || die "could not fetch the selftests"
    st="$src/tools/testing/selftests"
    mkdir -p "$out"
    tmp=$(mktemp -d "$out/build.XXXXXX")
    # shellcheck disable=SC2064 # expand now
    trap "rm -rf '$tmp'" EXIT
    # KHDR_INCLUDES: the 6.12 UAPI asm headers ahead of the cross libc's.
    khdr="$tmp/khdr"
    mkdir -p "$khdr"
    cp -r "$src/arch/arm64/include/uapi/asm" "$khdr/"
    rm -f "$khdr/asm/unistd.h" "$khdr/asm/Kbuild"
    local log="$out/build.log"
    : >"$log"
    note "building with $cc (warnings in ${log#"$repo"/})"
    mkdir -p "$tmp/ptracesel"
    # get_set_sud's PTRACE_*_SYSCALL_USER_DISPATCH_CONFIG: 6.12's header.
    mkdir -p "$khdr/linux"
    cp "$src/include/uapi/linux/ptrace.h" "$khdr/linux/"
    for t in get_syscall_info peeksiginfo vmaccess get_set_sud; do
        (cd "$st/ptrace" &&
            $cc -static -std=c99 -pthread -Wall -isystem "$khdr" -I"$st" "$t.c" -o "$tmp/ptracesel/$t") \
            2>>"$log" || die "could not build ptrace/$t (see $log)"
    done
    for t in breakpoint_test_arm64 step_after_suspend_test; do
        (cd "$st/breakpoints" &&
            $cc -static -Wall -O2 -I"$st" "$t.c" -o "$tmp/ptracesel/$t") \
            2>>"$log" || die "could not build breakpoints/$t (see $log)"
    done
    # arm64/Makefile's flags.
    (cd "$st/arm64/abi" &&
        $cc -static -Wall -O2 -g -I"$st" -isystem "$khdr" -I"$src/tools/include" ptrace.c -o "$tmp/ptracesel/ptrace") \
        2>>"$log" || die "could not build arm64/abi/ptrace (see $log)"
    aarch64-linux-gnu-strip "$tmp"/ptracesel/* || die "could not strip the programs"
    tar -C "$tmp" --owner=0 --group=0 -cf "$tarball.tmp" ptracesel
    mv "$tarball.tmp" "$tarball"
    note "built $(find "$tmp/ptracesel" -type f | wc -l) programs into ${tarball#"$repo"/}"
}

case "${1:-}" in
    build) build; echo "$tarball" ;;
    run) build; selftests_run "${2:-}" ;;
    table) build; selftests_table 24 ;;
    -h|--help|"") sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" ;;
    *) die "unknown command '$1' (build, run here|linux, table)" ;;
esac
