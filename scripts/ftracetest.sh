#!/bin/bash
# scripts/ftracetest.sh - Linux 6.12.117's ftracetest, unmodified, on this
# kernel or on real Linux (../shared/reflinux), and the comparison of both.
#
#   scripts/ftracetest.sh run [--linux] [--kernel IMG] [--smp N]
#                             [--timeout S] [--show-logs] [TARGET...]
#       Run ftracetest and print one line per test on stdout:
#           TEST RUN RESULT
#       TEST is relative to test.d (kprobe/profile.tc), RUN is `top`, or
#       `instance` for ftracetest's second pass over `flags: instance` tests
#       inside a new instance, RESULT is ftracetest's (PASS, FAIL,
#       UNRESOLVED, UNTESTED, UNSUPPORTED, XFAIL, UNDEFINED).  The guest's
#       console (ftracetest's progress; with --show-logs the tail of the
#       log of each test that neither passed nor was unsupported) goes to
#       stderr as it comes.  Default: this kernel (built unless --kernel)
#       on virt -smp 4; --linux: reflinux with -smp 2.  TARGETs are
#       ftracetest's arguments, default the seven target directories
#       test.d/{00basic,dynevent,event,filter,ftrace,instances,kprobe}.  Exit
#       status 0 when ftracetest ran its tests to the end, whatever their
#       results; 1 when it did not finish or ran none.
#
#   scripts/ftracetest.sh baseline
#       Run the target directories on reflinux and rewrite
#       tests/ftracetest/linux-6.12.117.txt (the committed baseline).
#
#   scripts/ftracetest.sh table [--results FILE] [run options]
#       Print the per-test table, this kernel against the baseline, as
#       Markdown, with the verdict of tests/ftracetest.rs for each test
#       (from FILE, the output of `run`, or from a run made now).  Exit
#       status 0 when the target is met.
#
# Each run boots once; under TCG the target directories take reflinux
# (-smp 2) 3 minutes on a quiet host, 5 to 8 on a busy one.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
baseline="$repo/tests/ftracetest/linux-6.12.117.txt"
reflinux="$repo/../shared/reflinux/run.sh"
targets_default=(test.d/00basic test.d/dynevent test.d/event test.d/filter
    test.d/ftrace test.d/instances test.d/kprobe)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "ftracetest: error: $*" >&2; exit 2; }

# run [options] [TARGET...]: see above.
run() {
    local linux=0 kernel="" smp="" timeout_s=1800 show_logs=() targets=() files raw rc=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --linux) linux=1; shift ;;
            --kernel) kernel=${2:?}; shift 2 ;;
            --smp) smp=${2:?}; shift 2 ;;
            --timeout) timeout_s=${2:?}; shift 2 ;;
            --show-logs) show_logs=(--show-logs); shift ;;
            -*) die "unknown option '$1'" ;;
            *) targets+=("$1"); shift ;;
        esac
    done
    [ ${#targets[@]} != 0 ] || targets=("${targets_default[@]}")
    local t
    for t in "${targets[@]}"; do
        [[ "$t" =~ ^test\.d(/[A-Za-z0-9_.-]+)*$ ]] || die "bad target '$t' (want test.d/DIR or test.d/DIR/TEST.tc)"
    done
    "$repo/scripts/setup.sh" >&2 || die "scripts/setup.sh failed"
    mapfile -t files < <("$repo/scripts/ftracetest-fetch.sh" --tar)
    local tar=${files[1]:?}
    local busybox
    busybox=$("$repo/scripts/setup.sh" --print-busybox)
    local cmd="/bin/busybox sh /bin/ftracetest-guest.sh ${show_logs[*]} ${targets[*]}"
    local guest=("$busybox" "$repo/scripts/ftracetest-guest.sh" "$tar")
    raw=$(mktemp "${TMPDIR:-/tmp}/ftracetest.XXXXXX")
    # shellcheck disable=SC2064 # expand now: raw is local
    trap "rm -f '$raw'" RETURN
    local t0=$SECONDS
    if [ $linux = 1 ]; then
        [ -x "$reflinux" ] || die "no $reflinux"
        "$reflinux" --tracefs --smp "${smp:-2}" --timeout "$timeout_s" "${guest[@]}" -- "$cmd" |
            tee "$raw" >&2 || rc=$?
    else
        local kargs=()
        [ -z "$kernel" ] || kargs=(--kernel "$kernel")
        "$repo/scripts/qemu-run.sh" ${kargs[@]+"${kargs[@]}"} --smp "${smp:-4}" \
            --timeout "$timeout_s" "${guest[@]}" -- "$cmd" | tee "$raw" >&2 || rc=$?
    fi
    echo >&2
    sed -n 's/\r$//; s/^@@ftracetest \([A-Z]*\) \([^ ]*\) (instance)$/\2 instance \1/p;
        s/^@@ftracetest \([A-Z]*\) \([^ ]*\)$/\2 top \1/p' "$raw"
    local end
    end=$(sed -n 's/\r$//; s/^.*@@ftracetest-end rc=\([0-9]*\) \([0-9]*\)$/\1 \2/p' "$raw" | tail -n 1)
    if [ -z "$end" ]; then
        echo "ftracetest: ftracetest did not finish (status $rc) after $((SECONDS - t0)) s" >&2
        return 1
    fi
    echo "ftracetest: $(grep -c '^@@ftracetest [A-Z]' "$raw" || true) tests;" \
        "ftracetest took ${end#* } s in the guest, the whole run $((SECONDS - t0)) s;" \
        "seconds per directory:" \
        "$(sed -n 's/\r$//; s/^@@ftracetest-secs \([0-9]*\) \([^/]*\)\/.*/\2 \1/p' "$raw" |
            awk '{ s[$1] += $2 } END { for (d in s) printf "%s %d, ", d, s[d] }' |
            sed 's/, $//')" >&2
    # ftracetest stopped before its first test (it found no tracefs).
    grep -q '^@@ftracetest [A-Z]' "$raw" || return 1
}

# note TEST: why Linux's result is what it is, where the result is not
# Linux's own doing.
note() {
    local tc="$1"
    if grep -q '^[^#]*modprobe' "$tc"; then
        echo "needs a loadable module ($(sed -n 's/^[^#]*modprobe \([^ ;]*\).*/\1/p' "$tc" | head -n 1))"
        return
    fi
    case "${tc##*/test.d/}" in
        dynevent/add_remove_uprobe.tc)
            echo "busybox: /bin/sh links to /bin/busybox, so no r-xp line of /proc/\$\$/maps ends in sh" ;;
    esac
}

write_baseline() {
    local results dir ver
    results=$(run --linux) || die "the run on reflinux did not finish"
    dir=$("$repo/scripts/ftracetest-fetch.sh")
    ver=$(cut -d' ' -f2 "$dir/.complete")
    mkdir -p "$(dirname "$baseline")"
    {
        echo "# Linux's ftracetest on Linux itself: Debian's linux-image-6.12.117+deb12-arm64"
        echo "# under ../shared/reflinux (QEMU virt, cortex-a72, -smp 2), with Debian's static"
        echo "# busybox and tools/testing/selftests/ftrace of linux-source-6.12 $ver,"
        echo "# unmodified.  Written by \`scripts/ftracetest.sh baseline\`; tests/ftracetest.rs"
        echo "# holds this kernel to it.  Columns: test (relative to test.d), run (top, or"
        echo "# instance: ftracetest's second pass inside a new instance), result, note."
        echo "#"
        local tc run result n
        while read -r tc run result; do
            n=$(note "$dir/test.d/$tc")
            printf '%-40s %-8s %-11s %s\n' "$tc" "$run" "$result" "$n" | sed 's/ *$//'
        done <<<"$results"
    } >"$baseline.tmp"
    mv "$baseline.tmp" "$baseline"
    echo "ftracetest: wrote ${baseline#"$repo"/}" >&2
}

table() {
    local results="" args=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --results) results=${2:?}; shift 2 ;;
            *) args+=("$1"); shift ;;
        esac
    done
    if [ -z "$results" ]; then
        results=$(mktemp "${TMPDIR:-/tmp}/ftracetest-results.XXXXXX")
        # shellcheck disable=SC2064
        trap "rm -f '$results'" EXIT
        run ${args[@]+"${args[@]}"} >"$results" || true
    fi
    cd "$repo"
    cargo run --quiet -p e2e --bin ftracetest-table -- "$results" "$baseline"
}

case "${1:-}" in
    run) shift; run "$@" ;;
    baseline) shift; [ $# = 0 ] || die "baseline takes no arguments"; write_baseline ;;
    table) shift; table "$@" ;;
    -h|--help) usage ;;
    *) usage >&2; exit 2 ;;
esac
