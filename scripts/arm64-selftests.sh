#!/bin/bash
# scripts/arm64-selftests.sh - Linux 6.12.117's arm64 ABI selftests
# (tools/testing/selftests/arm64/abi/{syscall-abi,hwcap,tpidr2} and every
# signal/testcases program), unmodified, built with
# `aarch64-linux-gnu-gcc -static` as their Makefiles build them, run in the
# guest and on ../shared/reflinux.
#
#   scripts/arm64-selftests.sh build      build (once) and print the tar
#   scripts/arm64-selftests.sh run here   run them on this kernel (virt,
#                                         smp 4, cortex-a72), raw output
#   scripts/arm64-selftests.sh run linux  the same on reflinux (smp 4,
#                                         cortex-a72: the same CPU)
#   scripts/arm64-selftests.sh table      both, then a table: each program's
#                                         verdict (exit status 0 PASS, 4
#                                         SKIP, else FAIL) and its TAP counts
#
# The sources come from Debian's linux-source-6.12 through
# `scripts/ftracetest-fetch.sh --arm64`; the compiler from Debian's
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross (scripts/setup.sh installs
# them).  Include paths as tools/testing/selftests/arm64/Makefile sets them:
# the selftests directory, the kernel's UAPI headers (here
# arch/arm64/include/uapi ahead of the cross libc's older ones, which fill
# in the generated asm/unistd_64.h and asm-generic wrappers) and
# tools/include; tpidr2 with nolibc as abi/Makefile builds it.  The binaries
# are stripped afterwards to keep the guest's archive small.  Output goes
# to .cache/arm64-selftests/linux-6.12.117/.
#
# Environment: KERNEL=IMAGE boots that image here (default: build
# target/kernel/kernel8.img with kbuild).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/.cache/arm64-selftests/linux-6.12.117"
tarball="$out/arm64sel.tar"
cc=aarch64-linux-gnu-gcc

note() { echo "arm64-selftests: $*" >&2; }
die() { echo "arm64-selftests: error: $*" >&2; exit 1; }
guest_name=arm64sel.sh
# shellcheck source=scripts/lib/selftests.sh
. "$repo/scripts/lib/selftests.sh"

# What the guest runs (busybox sh): every program, between markers the
# table and tests/arm64_selftests.rs parse.
guest_script='cd /tmp 2>/dev/null || cd /
busybox tar -xf /bin/arm64sel.tar || exit 125
for t in arm64sel/*; do
    echo "=== ${t#arm64sel/}"
    ./$t
    echo "=== rc $?"
done'

build() {
    [ -s "$tarball" ] && return 0
    command -v $cc >/dev/null 2>&1 ||
        die "$cc is missing: run scripts/setup.sh (it installs gcc-aarch64-linux-gnu and libc6-dev-arm64-cross)"
    local src st tmp khdr f n common
    src=$("$repo/scripts/ftracetest-fetch.sh" --arm64) || die "could not fetch the arm64 selftests"
    st="$src/tools/testing/selftests"
    mkdir -p "$out"
    tmp=$(mktemp -d "$out/build.XXXXXX")
    # shellcheck disable=SC2064 # expand now
    trap "rm -rf '$tmp'" EXIT
    # The UAPI asm headers of 6.12 less the ones only `make headers`
    # generates (asm/unistd.h includes the generated unistd_64.h).
    khdr="$tmp/khdr"
    mkdir -p "$khdr"
    cp -r "$src/arch/arm64/include/uapi/asm" "$khdr/"
    rm -f "$khdr/asm/unistd.h" "$khdr/asm/Kbuild"
    local log="$out/build.log"
    : >"$log"
    note "building with $cc (warnings in ${log#"$repo"/})"
    local cflags=(-static -Wall -O2 -g -I"$st" -isystem "$khdr" -I"$src/tools/include")
    mkdir -p "$tmp/arm64sel"
    (cd "$st/arm64/abi" &&
        $cc "${cflags[@]}" syscall-abi.c syscall-abi-asm.S -o "$tmp/arm64sel/syscall-abi" &&
        $cc "${cflags[@]}" hwcap.c -o "$tmp/arm64sel/hwcap" &&
        $cc -fno-asynchronous-unwind-tables -fno-ident -s -Os -nostdlib -static \
            -include "$src/tools/include/nolibc/nolibc.h" -ffreestanding -Wall \
            tpidr2.c -o "$tmp/arm64sel/tpidr2" -lgcc) 2>>"$log" || die "could not build abi/ (see $log)"
    common=(test_signals.c test_signals_utils.c testcases/testcases.c signals.S sve_helpers.c)
    for f in "$st"/arm64/signal/testcases/*.c; do
        n=$(basename "$f" .c)
        [ "$n" = testcases ] && continue
        (cd "$st/arm64/signal" &&
            $cc "${cflags[@]}" -D_GNU_SOURCE -std=gnu99 -I. "testcases/$n.c" "${common[@]}" \
                -o "$tmp/arm64sel/$n") 2>>"$log" || die "could not build signal/$n (see $log)"
    done
    aarch64-linux-gnu-strip "$tmp"/arm64sel/* || die "could not strip the programs"
    tar -C "$tmp" --owner=0 --group=0 -cf "$tarball.tmp" arm64sel
    mv "$tarball.tmp" "$tarball"
    note "built $(find "$tmp/arm64sel" -type f | wc -l) programs into ${tarball#"$repo"/}"
}

case "${1:-}" in
    build) build; echo "$tarball" ;;
    run) build; selftests_run "${2:-}" ;;
    table) build; selftests_table 40 ;;
    summary) selftests_summary "${2:?summary FILE}" ;;
    -h|--help|"") sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" ;;
    *) die "unknown command '$1' (build, run here|linux, table)" ;;
esac
