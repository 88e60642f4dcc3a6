# scripts/lib/selftests.sh - what the Linux-selftest runners share
# (sourced by scripts/arm64-selftests.sh and scripts/ptrace-selftests.sh):
# booting a tar of built test programs with a guest script on this kernel
# or on ../shared/reflinux, reducing the raw output to one verdict line per
# program, and the side-by-side table.
#
# The sourcing script sets: repo, tarball (the programs), guest_script (the
# script the guest runs), guest_name (its file name in /bin), and die().

# selftests_run here|linux: the guest's raw output on stdout.
selftests_run() {
    local busybox guest status=0
    busybox=$("$repo/scripts/setup.sh" --print-busybox)
    guest=$(mktemp -d)
    # shellcheck disable=SC2064 # expand now
    trap "rm -rf '$guest'" RETURN
    printf '%s\n' "$guest_script" >"$guest/$guest_name"
    case $1 in
        here)
            local kernel=${KERNEL:-}
            if [ -z "$kernel" ]; then
                (cd "$repo" && cargo run --quiet --release -p kbuild >/dev/null) ||
                    die "kernel build failed"
                kernel="$repo/target/kernel/kernel8.img"
            fi
            "$repo/scripts/qemu-run.sh" --kernel "$kernel" --smp 4 --cpu cortex-a72 \
                --timeout 300 "$busybox" "$guest/$guest_name" "$tarball" \
                -- "busybox sh /bin/$guest_name" || status=$?
            ;;
        linux)
            local reflinux="$repo/../shared/reflinux/run.sh"
            [ -x "$reflinux" ] || die "no ../shared/reflinux"
            "$reflinux" --smp 4 --timeout 300 "$busybox" "$guest/$guest_name" "$tarball" \
                -- "busybox sh /bin/$guest_name" || status=$?
            ;;
        *) die "run here|linux" ;;
    esac
    return $status
}

# selftests_summary FILE: one line per program: name verdict pass skip fail
# (from the guest script's `=== NAME` / `=== rc N` markers and TAP lines).
selftests_summary() {
    awk '
        /^=== rc / { rc = $3
            v = rc == 0 ? "PASS" : rc == 4 ? "SKIP" : "FAIL(" rc ")"
            printf "%s %s %d %d %d\n", name, v, pass, skip, fail; name = ""; next }
        /^=== / { name = $2; pass = skip = fail = 0; next }
        name != "" && /^ok .*# SKIP/ { skip++; next }
        name != "" && /^ok / { pass++; next }
        name != "" && /^not ok / { fail++; next }
        END { if (name != "") printf "%s %s %d %d %d\n", name, "CRASHED", pass, skip, fail }
    ' "$1"
}

# selftests_table WIDTH: both runs, then one row per program, here vs Linux.
selftests_table() {
    local dir w=$1
    dir=$(mktemp -d)
    # shellcheck disable=SC2064 # expand now
    trap "rm -rf '$dir'" EXIT
    selftests_run here >"$dir/here" 2>"$dir/here.err" || true
    selftests_run linux >"$dir/linux" 2>"$dir/linux.err" || true
    selftests_summary "$dir/here" >"$dir/h"
    selftests_summary "$dir/linux" >"$dir/l"
    printf "%-${w}s %-10s %-10s %-14s %-14s %s\n" test here linux "here p/s/f" "linux p/s/f" same
    join -a1 -a2 -e - -o 0,1.2,2.2,1.3,1.4,1.5,2.3,2.4,2.5 <(sort "$dir/h") <(sort "$dir/l") |
        awk -v w="$w" '{ same = ($2 == $3 && $4 == $7 && $5 == $8 && $6 == $9) ? "yes" : "NO"
               printf "%-" w "s %-10s %-10s %-14s %-14s %s\n", $1, $2, $3, $4 "/" $5 "/" $6, $7 "/" $8 "/" $9, same }'
}
