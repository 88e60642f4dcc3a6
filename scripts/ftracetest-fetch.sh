#!/bin/bash
# scripts/ftracetest-fetch.sh - Linux 6.12.117's ftrace selftests
# (tools/testing/selftests/ftrace: ftracetest and its test.d), unmodified,
# into the ignored cache; print the directory on stdout.
#
#   scripts/ftracetest-fetch.sh          ensure the directory, print its path
#   scripts/ftracetest-fetch.sh --tar    also print the path of a tar of it
#                                        (second line), which the guest
#                                        unpacks with busybox tar
#   scripts/ftracetest-fetch.sh --arm64  instead: Linux's arm64 ABI
#                                        selftests (see below), print the
#                                        root of that partial source tree
#
# --arm64 takes, from the same package, tools/testing/selftests/arm64 (and
# breakpoints/ and ptrace/ for scripts/ptrace-selftests.sh), the
# kselftest*.h headers beside it and what their build includes
# (tools/include, arch/arm64/include/uapi, and include/uapi/linux/ptrace.h
# for ptrace/get_set_sud), keeping the tree's layout, into
# .cache/ftracetest/linux-<version>/arm64-src/; scripts/arm64-selftests.sh
# builds them.  LINUX_SOURCE_TARXZ=/path/linux-source-6.12.tar.xz uses an
# already downloaded source tarball instead of the package.
#
# The files come from Debian's linux-source-6.12 package (the release that
# ../shared/reflinux boots), downloaded once with `apt-get download` into
# .cache/ftracetest/deb/ and kept there for the other trees; only the one
# directory is taken out of its 150 MB source tarball, into
# .cache/ftracetest/linux-<version>/ftrace/.  They are Linux's code: they never enter the
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
want_arm64=0
case "${1:-}" in
    "") ;;
    --tar) want_tar=1 ;;
    --arm64) want_arm64=1 ;;
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

# download: the package, fetched once into $cache/deb and kept there (the
# ftrace and the arm64 trees both come from it); sets `deb`.
download() {
    local d="$cache/deb" spec="$pkg=$pinned_ver"
    deb=$(compgen -G "$d/${pkg}_*_all.deb" | head -n 1 || true)
    if [ -n "$deb" ]; then
        note "using $(basename "$deb") from ${d#"$repo"/}"
        return
    fi
    mkdir -p "$d"
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
    download
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

# The arm64 selftests' sources and what their Makefiles include.
arm64_dir="$cache/linux-$upstream/arm64-src"
arm64_paths=(
    tools/testing/selftests/arm64
    tools/testing/selftests/breakpoints
    tools/testing/selftests/ptrace
    tools/testing/selftests/kselftest.h
    tools/testing/selftests/kselftest_harness.h
    tools/include
    arch/arm64/include/uapi
    include/uapi/linux/ptrace.h
)

fetch_arm64() {
    local tmp deb ver src p
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/fetch.XXXXXX")
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf '$tmp'" EXIT
    if [ -n "${LINUX_SOURCE_TARXZ:-}" ]; then
        [ -s "$LINUX_SOURCE_TARXZ" ] || die "LINUX_SOURCE_TARXZ=$LINUX_SOURCE_TARXZ is not a file"
        src="LINUX_SOURCE_TARXZ"
        tar -xJf "$LINUX_SOURCE_TARXZ" -C "$tmp" "${arm64_paths[@]/#/linux-source-6.12/}" ||
            die "$LINUX_SOURCE_TARXZ lacks the arm64 selftests"
    else
        download
        ver=$(dpkg-deb -f "$deb" Version)
        src="$pkg $ver"
        dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.12.tar.xz |
            tar -xJ -C "$tmp" "${arm64_paths[@]/#/linux-source-6.12/}" ||
            die "$(basename "$deb") lacks the arm64 selftests"
    fi
    for p in "${arm64_paths[@]}"; do
        [ -e "$tmp/linux-source-6.12/$p" ] || die "no $p in $src"
    done
    echo "$src ${arm64_paths[*]}" >"$tmp/linux-source-6.12/.complete"
    rm -rf "$arm64_dir"
    mkdir -p "$(dirname "$arm64_dir")"
    mv "$tmp/linux-source-6.12" "$arm64_dir"
    note "wrote ${arm64_dir#"$repo"/} (from $src)"
}

if [ $want_arm64 = 1 ]; then
    # Each path's presence: a tree fetched with a shorter list is fetched again.
    complete() { [ -f "$arm64_dir/.complete" ] && [ -f "$arm64_dir/include/uapi/linux/ptrace.h" ]; }
    if ! complete; then
        mkdir -p "$cache"
        exec 8>"$cache/lock"
        flock 8 || die "could not lock $cache/lock"
        complete || fetch_arm64
    fi
    echo "$arm64_dir"
    exit 0
fi

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
