#!/bin/bash
# scripts/ftracetest-fetch.sh - Linux 6.12.117's ftrace selftests
# (tools/testing/selftests/ftrace: ftracetest and its test.d), unmodified,
# into the ignored cache; print the directory on stdout.
#
#   scripts/ftracetest-fetch.sh          ensure the directory, print its path
#   scripts/ftracetest-fetch.sh --tar    also print the path of a tar of it
#                                        (second line), which the guest
#                                        unpacks with busybox tar
#
# The files come from Debian's linux-source-6.12 package (the release that
# ../shared/reflinux boots), downloaded with `apt-get download` into a
# scratch directory; only the one directory is taken out of its 150 MB
# source tarball, into .cache/ftracetest/linux-<version>/ftrace/, and the
# package is deleted again.  They are Linux's code: they never enter the
# repository.  Idempotent and fast once done; concurrent runs wait on a
# lock and then find the work done.  scripts/setup.sh calls this.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$repo/.cache/ftracetest"
pkg=linux-source-6.12
# The version reflinux boots (linux-image-6.12.117+deb12-arm64); if it has
# left the archive, the newest linux-source-6.12 is taken and named.
pinned_ver="6.12.117-1~deb12u1"
upstream=6.12.117
selftests=tools/testing/selftests/ftrace

note() { echo "ftracetest-fetch: $*" >&2; }
die() { echo "ftracetest-fetch: error: $*" >&2; exit 1; }

want_tar=0
case "${1:-}" in
    "") ;;
    --tar) want_tar=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1'" ;;
esac

dir="$cache/linux-$upstream/ftrace"
tarball="$cache/linux-$upstream/ftrace.tar"

ready() {
    [ -f "$dir/.complete" ] && [ -x "$dir/ftracetest" ] && [ -d "$dir/test.d" ] &&
        { [ $want_tar = 0 ] || [ -s "$tarball" ]; }
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "root is needed to run: $*"; fi
}

# download DIR: fetch the package into DIR; sets `deb`.
download() {
    local d=$1 spec="$pkg=$pinned_ver"
    command -v apt-get >/dev/null 2>&1 || die "apt-get is needed to download $pkg"
    if ! apt-cache show "$spec" >/dev/null 2>&1; then
        note "apt-get update"
        as_root apt-get update >/dev/null 2>&1 || die "apt-get update failed"
    fi
    if ! apt-cache show "$spec" >/dev/null 2>&1; then
        note "warning: $pkg $pinned_ver is not in the archive any more; using the newest $pkg"
        spec=$pkg
    fi
    note "downloading $spec (about 150 MB) for $selftests"
    (cd "$d" && apt-get -o APT::Sandbox::User=root download "$spec" >/dev/null 2>&1) ||
        die "could not download $spec"
    deb=$(compgen -G "$d/${pkg}_*_all.deb" | head -n 1 || true)
    [ -n "$deb" ] || die "apt-get download of $spec left no .deb"
}

fetch() {
    local tmp deb ver
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/fetch.XXXXXX")
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf '$tmp'" EXIT
    download "$tmp"
    ver=$(dpkg-deb -f "$deb" Version)
    # Stream: the package holds usr/src/linux-source-6.12.tar.xz, of
    # which only the selftests directory is unpacked.
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.12.tar.xz |
        tar -xJ -C "$tmp" "linux-source-6.12/$selftests" ||
        die "$(basename "$deb") has no $selftests"
    [ -x "$tmp/linux-source-6.12/$selftests/ftracetest" ] ||
        die "$(basename "$deb"): no executable ftracetest in $selftests"
    echo "$pkg $ver $selftests" >"$tmp/linux-source-6.12/$selftests/.complete"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    mv "$tmp/linux-source-6.12/$selftests" "$dir"
    note "wrote ${dir#"$repo"/} (from $pkg $ver)"
}

# The tar the guest unpacks: the directory as `ftrace/`, owned by root.
make_tar() {
    tar -C "$(dirname "$dir")" --owner=0 --group=0 \
        -cf "$tarball.tmp" ftrace
    mv "$tarball.tmp" "$tarball"
}

if ! ready; then
    mkdir -p "$cache"
    exec 8>"$cache/lock"
    flock 8 || die "could not lock $cache/lock"
    [ -f "$dir/.complete" ] || fetch
    if [ $want_tar = 1 ] && [ ! -s "$tarball" ]; then make_tar; fi
fi
echo "$dir"
[ $want_tar = 0 ] || echo "$tarball"
