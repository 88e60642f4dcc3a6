#!/usr/bin/env bash
# scripts/e2e.sh - runs the QEMU tests of tests/ (the e2e crate) and any
# extra commands, JOBS at a time, test by test rather than binary by binary.
#
#   scripts/e2e.sh [--jobs N] [--with CMD]... [FILTER...]
#
# `cargo test -p e2e -- --test-threads=2` runs one test binary after the
# other: while a binary's last, longest test runs (ftracetest's one boot
# takes minutes), the second core waits for it.  Here every test of every
# binary is a job of its own (`BIN --exact NAME`, in tests/ as cargo runs
# it), the known long ones first, and JOBS jobs (default $E2E_JOBS or 2,
# as many as --test-threads=2 ran) run at any time, so both cores stay busy
# to the end.  Each `--with CMD` (a shell command run from the repository
# root, such as userland/test-on-linux.sh) is one more job, started with
# the long tests.  FILTERs keep the tests whose `binary::name` contains one
# of them.
#
# scripts/setup.sh runs once (then SETUP_DONE=1 spares each boot its
# checks), the kernel images come from $KERNEL_IMAGE and $KTEST_IMAGE,
# built first when unset (once, not by each test), and the user test
# programs are built once before the jobs start.  Prints one line per job as it ends (ok or
# FAILED, seconds), the output of each failed one, then a summary; exit
# status 1 when any job failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

jobs=${E2E_JOBS:-2}
withs=()
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) jobs=${2:?}; shift 2 ;;
        --with) withs+=("${2:?}"); shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "e2e: unknown option '$1'" >&2; exit 2 ;;
        *) filters+=("$1"); shift ;;
    esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "e2e: bad --jobs '$jobs'" >&2; exit 2; }

# Tests that take a minute or more under TCG (measured on 2 cores), longest
# first: started first, they do not end the run alone.  A test missing
# here only runs later; a name here that no longer exists is ignored.
long_first=(
    ftracetest::ftracetest_meets_linux_baseline_on_virt_smp4
    tracepoints::toggling_
    ktest::in_kernel_tests_pass_on_virt_gicv3
    ktest::in_kernel_tests_pass_on_raspi4b
    ktest::in_kernel_tests_pass_on_virt_smp4
    adversary::
    kprobetests::
    trace_cmd::
    ktest::in_kernel_tests_pass
    usertests::
    proof::
    hist::
)

# Everything the boots need is in place; each boot need not check again.
scripts/setup.sh
export SETUP_DONE=1
if [ -z "${KERNEL_IMAGE:-}" ]; then KERNEL_IMAGE=$(cargo run --quiet --release -p kbuild); fi
if [ -z "${KTEST_IMAGE:-}" ]; then KTEST_IMAGE=$(cargo run --quiet --release -p kbuild -- --test); fi
export KERNEL_IMAGE KTEST_IMAGE

# The user test programs, as e2e::proof_binary builds them (its own build
# in each test is then a no-op instead of a race for cargo's lock).
CARGO_PROFILE_RELEASE_DEBUG=0 cargo build --quiet --release -p proof -p usertests \
    -p kprobetests -p ptracetests -p ptrace-tools -p minigdb \
    --target aarch64-unknown-none --target-dir target/user

work=$(mktemp -d "${TMPDIR:-/tmp}/e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The test binaries, then their tests: "binary path test" lines.
cargo test --quiet -p e2e --no-run --message-format=json |
    sed -n 's/.*"target":{[^}]*"kind":\["test"\][^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1 \2/p' \
        > "$work/binaries"
[ -s "$work/binaries" ] || { echo "e2e: found no test binaries" >&2; exit 1; }
while read -r bin exe; do
    "$exe" --list --format terse | sed -n "s|^\(.*\): test\$|$bin $exe \1|p"
done < "$work/binaries" > "$work/all"
if [ ${#filters[@]} != 0 ]; then
    while read -r bin exe test; do
        for f in "${filters[@]}"; do
            if [[ "$bin::$test" == *"$f"* ]]; then echo "$bin $exe $test"; break; fi
        done
    done < "$work/all" > "$work/chosen"
else
    cp "$work/all" "$work/chosen"
fi

# Long ones first, in long_first's order, then the rest in cargo's order.
: > "$work/order"
for l in "${long_first[@]}"; do
    while read -r bin exe test; do
        if [[ "$bin::$test" == "$l"* ]] && ! grep -qxF "$bin $exe $test" "$work/order"; then
            echo "$bin $exe $test" >> "$work/order"
        fi
    done < "$work/chosen"
done
grep -vxFf "$work/order" "$work/chosen" >> "$work/order" || true

n=0
# job ID KIND NAME CMD...: runs CMD into ID's log, then writes ID's result
# line; KIND is "test" (one test of a binary) or "cmd" (a --with command).
job() {
    local id=$1 kind=$2 name=$3 t0=$SECONDS rc=0
    shift 3
    "$@" > "$work/$id.log" 2>&1 < /dev/null || rc=$?
    local secs=$((SECONDS - t0))
    # A test job passes only if its name chose exactly one test (libtest
    # passes a filter that matches none).
    if [ $rc = 0 ] && [ "$kind" = test ] && ! grep -qx 'running 1 test' "$work/$id.log"; then
        echo "e2e: $name chose no single test" >> "$work/$id.log"
        rc=1
    fi
    if [ $rc = 0 ]; then
        echo "e2e: ok     ${secs}s $name" >&2
    else
        echo "$name" > "$work/$id.failed"
        { echo "e2e: FAILED ${secs}s $name (status $rc):"; cat "$work/$id.log"; } >&2
    fi
}
running=0
start() {
    if [ $running -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    n=$((n + 1))
    job "$n" "$@" &
    running=$((running + 1))
}

t0=$SECONDS
total=0
for w in ${withs[@]+"${withs[@]}"}; do
    start cmd "$w" bash -c "$w"
    total=$((total + 1))
done
while read -r bin exe test; do
    start test "$bin::$test" bash -c 'cd tests && exec "$0" --exact "$1" --test-threads=1' "$exe" "$test"
    total=$((total + 1))
done < "$work/order"
wait

failed=$(cat "$work"/*.failed 2>/dev/null || true)
if [ -n "$failed" ]; then
    echo "e2e: $(grep -c . <<<"$failed") of $total jobs FAILED in $((SECONDS - t0)) s:" >&2
    sed 's/^/    /' <<<"$failed" >&2
    exit 1
fi
echo "e2e: all $total jobs passed in $((SECONDS - t0)) s" >&2
