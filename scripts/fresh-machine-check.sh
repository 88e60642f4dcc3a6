#!/bin/bash
# scripts/fresh-machine-check.sh - prove that the README's two commands work
# on a freshly installed Debian with nothing but rustup on it.
#
#   scripts/fresh-machine-check.sh [--keep] [--boot-only] [--reuse] [ROOT]
#
# ROOT (default /work/fresh-root; it must be outside the repo) receives a
# debootstrapped Debian of the host's release, made like a fresh install:
# Priority required and important packages, the release's main, -updates
# and -security sources, plus what installing rustup itself needs (its
# installer, offline from the host's rustup binary, with
# `--default-toolchain none`, and ca-certificates for its downloads).  No
# QEMU, no C compiler, no Rust toolchain, no cargo registry, no .cache, no
# target/.  The repo's committed HEAD is cloned into ROOT/root/src, and in
# a chroot (as root, a clean environment) the README's commands run:
#
#   1. scripts/qemu-run.sh            fed 'echo ...; poweroff'
#                                     on its console; it must reach the shell
#   2. CI=true scripts/test.sh        must exit 0
#
# Their output goes to ROOT/../fresh-logs/{boot,test}.log; each step's
# time is printed.  ROOT is deleted at the end unless --keep (an existing
# ROOT with a finished debootstrap is reused, not remade).  --boot-only
# stops after command 1.  --reuse (for finding the next failure faster, not
# a proof) keeps a kept ROOT's clone with its .cache and target/ and only
# fast-forwards it to the repo's HEAD.
#
# How long (measured on 2 cores): debootstrap 2 to 3 minutes, rustup under
# one, command 1 7 minutes quiet and 14 under a load of 10 (the toolchain
# download, apt installs, Debian's archives, Linux's source, the first
# kernel build), then command 2 as long as scripts/test.sh from an empty
# target/: 20 minutes quiet, an hour or more under load.  Not part of scripts/test.sh.  Needs root, the network to Debian's
# archive, crates.io and the Rust distribution server, and ~15 GB of disk.
#
# The workplace's own network setting is carried into ROOT as a fresh
# machine there would have it: its extra CA certificates
# (/usr/local/share/ca-certificates) and apt's Check-Valid-Until/Check-Date
# options, when the host has them.
set -euo pipefail

# Bash reads a script while it runs it: run from a copy, so that the repo
# changing meanwhile (an edit, a checkout) cannot change this long run.
if [ -z "${FRESH_CHECK_REPO:-}" ]; then
    FRESH_CHECK_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    export FRESH_CHECK_REPO
    copy=$(mktemp /tmp/fresh-machine-check.XXXXXX)
    cp "${BASH_SOURCE[0]}" "$copy"
    exec bash "$copy" "$@"
fi
repo=$FRESH_CHECK_REPO
case $0 in /tmp/fresh-machine-check.*) rm -f "$0" ;; esac
keep=0
boot_only=0
reuse=0
root=/work/fresh-root
while [ $# -gt 0 ]; do
    case $1 in
        --keep) keep=1 ;;
        --boot-only) boot_only=1 ;;
        --reuse) reuse=1; keep=1 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) echo "fresh-machine-check: unknown option $1" >&2; exit 2 ;;
        *) root=$1 ;;
    esac
    shift
done

note() { echo "fresh-machine-check: $*" >&2; }
die() { echo "fresh-machine-check: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
root=$(realpath -m "$root")
case "$root/" in
    "$repo"/*) die "ROOT ($root) must be outside the repo" ;;
    /|/work/|/root/|/tmp/) die "refusing ROOT=$root" ;;
esac
logs=$(dirname "$root")/fresh-logs
mkdir -p "$logs"

# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the host's Debian release from /etc/os-release"
mirror=http://deb.debian.org/debian

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    if [ $keep = 0 ] && [ -d "$root" ]; then
        note "deleting $root"
        rm -rf --one-file-system "$root"
    fi
}
trap cleanup EXIT

mount_in() { # mount_in ARGS... TARGET
    mount "$@"
    mounted+=("${!#}")
}

# elapsed START: minutes and seconds since START (seconds since the epoch).
elapsed() {
    local s=$(($(date +%s) - $1))
    printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# ------------------------------------------------------------ debootstrap
if [ ! -e "$root/.debootstrap-done" ]; then
    command -v debootstrap >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; } ||
        die "could not install debootstrap"
    rm -rf --one-file-system "$root"
    t=$(date +%s)
    note "debootstrap $codename into $root"
    debootstrap "$codename" "$root" "$mirror" >"$logs/debootstrap.log" 2>&1 ||
        { tail -n 20 "$logs/debootstrap.log" >&2; die "debootstrap failed"; }
    note "debootstrap took $(elapsed "$t")"
    touch "$root/.debootstrap-done"
fi

# What a fresh install's sources are: main, -updates and -security.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $codename main
deb $mirror $codename-updates main
deb http://deb.debian.org/debian-security $codename-security main
EOF
# The workplace's apt options and CA certificates (see the header).
opts=$(grep -rhsE 'Acquire::Check-(Valid-Until|Date)' /etc/apt/apt.conf.d/ || true)
[ -z "$opts" ] || echo "$opts" >"$root/etc/apt/apt.conf.d/99fresh-machine-check"
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts" 2>/dev/null || true

mount_in -t proc proc "$root/proc"
mount_in -t sysfs sys "$root/sys"
mount_in --bind /dev "$root/dev"
mount_in --bind /dev/pts "$root/dev/pts"
mkdir -p "$root/dev/shm" && mount_in -t tmpfs shm "$root/dev/shm"

# in_root CMD...: run CMD in ROOT as root with a login-like clean environment.
in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root \
        PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        "$@"
}

# ------------------------------------------------------------ rustup only
if [ ! -x "$root/root/.cargo/bin/rustup" ]; then
    t=$(date +%s)
    note "installing rustup (no toolchain) and ca-certificates in $root"
    in_root apt-get update -qq >"$logs/rustup.log" 2>&1 &&
        in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            ca-certificates >>"$logs/rustup.log" 2>&1 ||
        { tail -n 20 "$logs/rustup.log" >&2; die "could not install ca-certificates"; }
    host_rustup=$(command -v rustup) || die "the host has no rustup to install from"
    cp "$host_rustup" "$root/tmp/rustup-init"
    in_root /tmp/rustup-init -y --no-modify-path --default-toolchain none --profile minimal \
        >>"$logs/rustup.log" 2>&1 ||
        { tail -n 20 "$logs/rustup.log" >&2; die "rustup-init failed"; }
    rm -f "$root/tmp/rustup-init"
    note "rustup took $(elapsed "$t")"
fi

# ------------------------------------------------------- the fresh clone
if [ $reuse = 1 ] && [ -d "$root/root/src/.git" ]; then
    git -C "$root/root/src" pull -q --ff-only || die "git pull in the kept clone failed"
else
    rm -rf "$root/root/src"
    git clone -q --no-hardlinks "$repo" "$root/root/src" || die "git clone failed"
fi
note "cloned $(git -C "$repo" log -1 --format='%h %s' | cut -c1-70)"
# Nothing cached: the worktree's .cache symlink is not in git.
[ $reuse = 1 ] || [ ! -e "$root/root/src/.cache" ] || die "the clone has a .cache"

# --------------------------------------------------- README command 1: boot
t=$(date +%s)
note "1: scripts/qemu-run.sh (log: $logs/boot.log)"
rc=0
# The console echoes the input as it arrives, so the marker is only whole in
# the shell's output; the first line is blank: its character may be lost
# before the console reads.
printf '\nexport M=shell\necho fresh-machine-check: reached the $M\npoweroff\n' |
    in_root timeout 3600 bash -c 'cd /root/src && scripts/qemu-run.sh' >"$logs/boot.log" 2>&1 || rc=$?
note "1: took $(elapsed "$t"), exit status $rc"
tail -n 15 "$logs/boot.log" >&2
grep -q 'fresh-machine-check: reached the shell' "$logs/boot.log" ||
    die "1: the kernel did not reach the shell"
[ $boot_only = 1 ] && { note "1 passed (--boot-only)"; exit 0; }

# --------------------------------------------------- README command 2: test
t=$(date +%s)
note "2: CI=true scripts/test.sh (log: $logs/test.log)"
rc=0
in_root timeout 10800 nice -n 10 env CI=true bash -c 'cd /root/src && scripts/test.sh' \
    >"$logs/test.log" 2>&1 || rc=$?
note "2: took $(elapsed "$t"), exit status $rc"
tail -n 25 "$logs/test.log" >&2
[ $rc = 0 ] || die "2: scripts/test.sh failed"
note "both README commands passed on a fresh $codename"
