#!/bin/bash
# scripts/setup.sh - install what building, testing and booting the kernel
# needs, on a Debian bookworm machine; do nothing (quietly, fast) when it is
# all there.
#
#   scripts/setup.sh              ensure everything below
#   scripts/setup.sh --print-dtb  ensure only the Raspberry Pi 4 device tree
#                                 and print its path on stdout
#   scripts/setup.sh --print-busybox
#                                 ensure only Debian's static busybox and
#                                 print its path on stdout
#   scripts/setup.sh --print-debian
#                                 ensure only the Debian programs archive
#                                 (6. below) and print its path on stdout
#   scripts/setup.sh --print-gdbserver
#                                 ensure only the gdbserver archive (8.
#                                 below) and print its path on stdout
#   scripts/setup.sh --print-trace-cmd
#                                 ensure only the trace-cmd archive (9.
#                                 below) and print its path on stdout
#
# 0. ca-certificates when its bundle is missing: rustup and apt fetch over
#    https.
# 1. The Rust toolchain pinned in rust-toolchain.toml, with its targets and
#    components (rustup does not install it by itself when
#    RUSTUP_AUTO_INSTALL=0).
#    Then a host C compiler (gcc, libc6-dev): rustc links with `cc`.
# 2. qemu-system-aarch64 9 or later (from bookworm-backports on bookworm,
#    whose own QEMU is 7.2 and has no raspi4b machine).
# 3. The Raspberry Pi 4 device tree, bcm2711-rpi-4-b.dtb, for QEMU raspi4b
#    and the SD card image: taken from Debian's arm64 Linux package into
#    .cache/dtb/.  A package already downloaded by ../shared/reflinux is
#    reused.
# 4. Debian's static arm64 busybox (package busybox-static), the unmodified
#    Linux program tests/busybox.rs runs, into .cache/busybox/.  Taken from
#    ../shared/reflinux's cache when it has one, so both run the same build.
# 5. Linux 6.12.117's ftrace selftests (ftracetest), by
#    scripts/ftracetest-fetch.sh, into .cache/ftracetest/ (xz-utils is
#    installed first when xz is missing: Linux's source is a .tar.xz;
#    cpio too, which tools/mkinitramfs's test lists its archives with).
# 6. Debian's dynamically linked arm64 programs for tests/debian.rs: the
#    packages libc6, bash, coreutils, strace and the libraries they need, fetched
#    with apt-get download (arm64 added to dpkg's architectures) and packed
#    into .cache/debian/debian.tar: /lib/ld-linux-aarch64.so.1 and the
#    libraries at their Debian paths, the programs in /usr/bin.
# 7. Debian's arm64 cross compiler (gcc-aarch64-linux-gnu,
#    libc6-dev-arm64-cross) and, built with it, Linux 6.12.117's arm64 ABI
#    selftests (scripts/arm64-selftests.sh build).
# 8. Debian's arm64 gdbserver for tests/gdbserver.rs, with the C++ runtime
#    it links (libstdc++6, libgcc-s1), packed like 6. into
#    .cache/gdbserver/gdbserver.tar (unpacked over 6.'s archive).
# 9. Debian's trace-cmd for tests/trace_cmd.rs, fetched like 6. with its
#    libraries (libtraceevent1 and its plugins, libtracefs1, libzstd1) and
#    perf-tools-unstable's ftrace scripts, packed into
#    .cache/trace-cmd/trace-cmd.tar to unpack over the archive of 6.
#
# Messages go to stderr.  Exit status 0 when everything is in place,
# non-zero with a "setup: error: ..." line otherwise.  Installing needs
# root (sudo is used when available).  Safe to run concurrently: the
# installing part runs under a lock.  With SETUP_DONE=1 in the environment
# the first form returns at once (a caller that ran it already says so).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$repo/.cache"
dtb_dir="$cache/dtb"
dtb="$dtb_dir/bcm2711-rpi-4-b.dtb"
reflinux_debs="$repo/../shared/reflinux/cache/debs"

# The Debian kernel package the DTB comes from: the one reflinux boots, so
# that both use the same Linux release.  If it has left the archive, the
# newest linux-image-6.12.*+deb12-arm64 is used instead.
pinned_kernel_pkg="linux-image-6.12.117+deb12-arm64"
dtb_in_pkg="usr/lib/linux-image-*/broadcom/bcm2711-rpi-4-b.dtb"
busybox_dir="$cache/busybox"
busybox="$busybox_dir/busybox"
busybox_pkg="busybox-static"
reflinux_busybox="$repo/../shared/reflinux/cache/busybox/busybox"
qemu_min_major=9

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

note() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

mode=all
case "${1:-}" in
    "") ;;
    --print-dtb) mode=dtb ;;
    --print-busybox) mode=busybox ;;
    --print-debian) mode=debian ;;
    --print-gdbserver) mode=gdbserver ;;
    --print-trace-cmd) mode=trace_cmd ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
esac
[ $# -le 1 ] || die "too many arguments"

# rustup installs into ~/.cargo/bin, which a non-login shell may lack.
case ":$PATH:" in
    *":$HOME/.cargo/bin:"*) ;;
    *) [ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH" ;;
esac

# ------------------------------------------------------------------ helpers
as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "root is needed to run: $* (run this script as root, or install sudo)"
    fi
}

# quietly CMD...: run CMD with its output in a log, shown only if it fails.
quietly() {
    local log rc=0
    log=$(mktemp)
    "$@" >"$log" 2>&1 || rc=$?
    if [ $rc != 0 ]; then
        sed 's/^/  | /' "$log" >&2
    fi
    rm -f "$log"
    return $rc
}

need_apt() {
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
        die "$1, and this is not a Debian-like system with apt-get: install it by hand"
    fi
}

apt_updated=0
apt_update() {
    [ $apt_updated = 1 ] && return 0
    note "apt-get update"
    quietly as_root apt-get update || die "apt-get update failed"
    apt_updated=1
}

# newest_file GLOB: the last file matching GLOB in version order, or nothing.
newest_file() {
    compgen -G "$1" | sort -V | tail -n 1 || true
}

codename() {
    # shellcheck disable=SC1091
    (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
}

ensure_backports() {
    if ! grep -rqs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        note "adding bookworm-backports to the apt sources"
        echo "deb http://deb.debian.org/debian bookworm-backports main" |
            as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null ||
            die "could not write /etc/apt/sources.list.d/bookworm-backports.list"
        apt_updated=0
    fi
}

# ------------------------------------------------------------ the toolchain
# toml_value KEY: the string value of KEY in rust-toolchain.toml.
toml_value() {
    sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" \
        "$repo/rust-toolchain.toml" | head -n 1
}

# toml_list KEY: the strings of the array KEY (which may span lines), one a line.
toml_list() {
    sed 's/#.*//' "$repo/rust-toolchain.toml" | tr '\n' ' ' |
        grep -o "$1[[:space:]]*=[[:space:]]*\[[^]]*\]" | sed 's/^[^[]*\[//' |
        grep -o '"[^"]*"' | tr -d '"' || true
}

ensure_toolchain() {
    [ -f "$repo/rust-toolchain.toml" ] || die "no rust-toolchain.toml in $repo"
    local channel profile host installed missing_targets=() missing_components=() t c
    channel=$(toml_value channel)
    [ -n "$channel" ] || die "rust-toolchain.toml names no channel"
    profile=$(toml_value profile)
    local -a targets components
    mapfile -t targets < <(toml_list targets)
    mapfile -t components < <(toml_list components)
    command -v rustup >/dev/null 2>&1 ||
        die "rustup is not installed: see https://rustup.rs, then run this again"

    if ! rustup toolchain list | grep -q "^$channel-"; then
        note "installing Rust $channel (targets: ${targets[*]}; components: ${components[*]})"
        local args=(toolchain install "$channel" --profile "${profile:-minimal}")
        for t in "${targets[@]}"; do args+=(--target "$t"); done
        for c in "${components[@]}"; do args+=(--component "$c"); done
        rustup "${args[@]}" >&2 || die "rustup could not install $channel"
    fi
    # Host triple: the installed toolchain's name less the channel.
    host=$(rustup toolchain list | sed -n "s/^$channel-\\([^ ]*\\).*/\\1/p" | head -n 1)
    installed=$(rustup component list --installed --toolchain "$channel") ||
        die "rustup cannot list the components of $channel"
    for t in "${targets[@]}"; do
        grep -qx "rust-std-$t" <<<"$installed" || missing_targets+=("$t")
    done
    for c in "${components[@]}"; do
        # Host tools are listed with the host triple ("clippy-x86_64-...").
        grep -qxE "$c(-$host)?" <<<"$installed" || missing_components+=("$c")
    done
    if [ ${#missing_targets[@]} != 0 ]; then
        note "adding Rust targets ${missing_targets[*]} to $channel"
        rustup target add --toolchain "$channel" "${missing_targets[@]}" >&2 ||
            die "rustup could not add targets ${missing_targets[*]}"
    fi
    if [ ${#missing_components[@]} != 0 ]; then
        note "adding Rust components ${missing_components[*]} to $channel"
        rustup component add --toolchain "$channel" "${missing_components[@]}" >&2 ||
            die "rustup could not add components ${missing_components[*]}"
    fi
}

# ------------------------------------------------------ the host C compiler
# rustc links host programs (kbuild, build scripts, proc macros, the test
# binaries) by calling `cc`, which a fresh Debian does not have; rustup
# does not install it.
host_cc_ok() {
    command -v cc >/dev/null 2>&1 || return 1
    local t
    t=$(mktemp -d)
    tmpdirs+=("$t")
    echo 'int main(void) { return 0; }' >"$t/a.c"
    cc "$t/a.c" -o "$t/a" >/dev/null 2>&1
}

ensure_host_cc() {
    host_cc_ok && return 0
    need_apt "a C compiler and linker (cc) is needed: rustc links host programs with it"
    note "installing gcc and libc6-dev (rustc links host programs with cc)"
    apt_update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends gcc libc6-dev ||
        die "could not install gcc and libc6-dev"
    host_cc_ok || die "cc is still missing or cannot link a C program"
}

# ensure_program PROGRAM PACKAGE WHY: install PACKAGE when PROGRAM is not on
# PATH (a fresh Debian lacks some of what the scripts run on the host).
ensure_program() {
    command -v "$1" >/dev/null 2>&1 && return 0
    need_apt "$1 is needed: $3"
    note "installing $2 ($1 is missing; $3)"
    apt_update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "$2" ||
        die "could not install $2"
    command -v "$1" >/dev/null 2>&1 || die "$1 is still missing after installing $2"
}

# The CA bundle https needs (SETUP_CA_BUNDLE stands in for it in tests).
ca_bundle=${SETUP_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

ensure_ca_certificates() {
    [ -s "$ca_bundle" ] && return 0
    need_apt "ca-certificates is needed: rustup and apt download over https"
    note "installing ca-certificates ($ca_bundle is missing)"
    apt_update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends ca-certificates ||
        die "could not install ca-certificates"
    [ -s "$ca_bundle" ] || die "$ca_bundle is still missing after installing ca-certificates"
}

# ------------------------------------------------------------------- QEMU
# Prints nothing (and succeeds) when QEMU is absent: callers run under
# `set -e -o pipefail`, where a failing command substitution would end the
# script before it could install QEMU.
qemu_major() {
    command -v qemu-system-aarch64 >/dev/null 2>&1 || return 0
    { qemu-system-aarch64 --version 2>/dev/null || true; } |
        sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p' | head -n 1
}

qemu_ok() {
    local major
    major=$(qemu_major)
    [ -n "$major" ] && [ "$major" -ge $qemu_min_major ]
}

ensure_qemu() {
    qemu_ok && return 0
    local have
    have=$(qemu_major)
    need_apt "qemu-system-aarch64 $qemu_min_major or later is needed${have:+ (found $have)}"
    local release=()
    if [ "$(codename)" = bookworm ]; then
        ensure_backports
        release=(-t bookworm-backports)
    fi
    note "installing qemu-system-arm${release[*]:+ from bookworm-backports}" \
        "(qemu-system-aarch64 is ${have:+version }${have:-missing}; need $qemu_min_major or later)"
    apt_update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "${release[@]}" qemu-system-arm ||
        die "could not install qemu-system-arm"
    qemu_ok || die "qemu-system-aarch64 is still missing or older than $qemu_min_major" \
        "($(qemu-system-aarch64 --version 2>/dev/null | head -n 1))"
}

# ------------------------------------------------- the arm64 C compiler
# Linux's arm64 selftests (scripts/arm64-selftests.sh) and the benchmark's
# C programs are built with Debian's cross compiler and its arm64 libc.
ensure_cross_gcc() {
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 &&
        [ -e /usr/aarch64-linux-gnu/lib/libc.a ] && return 0
    need_apt "aarch64-linux-gnu-gcc (with a static arm64 libc) is needed for Linux's arm64 selftests"
    note "installing gcc-aarch64-linux-gnu and libc6-dev-arm64-cross"
    apt_update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross ||
        die "could not install gcc-aarch64-linux-gnu and libc6-dev-arm64-cross"
}

# -------------------------------------------------------- the Pi 4 DTB
is_dtb() {
    [ -s "$1" ] && [ "$(od -An -tx1 -N4 "$1" | tr -d ' \n')" = d00dfeed ]
}

ensure_arm64_arch() {
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        note "dpkg --add-architecture arm64 (to download arm64 packages)"
        as_root dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
        apt_updated=0
    fi
}

newest_kernel_pkg() {
    apt-cache pkgnames linux-image-6.12. 2>/dev/null |
        grep -E '^linux-image-6\.12\.[0-9]+\+deb12-arm64$' | sort -V | tail -n 1
}

# download_kernel_deb DIR: download the kernel package into DIR and set
# `deb` to the file.
download_kernel_deb() {
    local dir=$1 pkg=$pinned_kernel_pkg
    need_apt "the Raspberry Pi 4 device tree comes from Debian's arm64 kernel package"
    ensure_arm64_arch
    # As for reflinux: the pinned package is in bookworm-security, newer
    # ones may be in backports.
    if [ "$(codename)" = bookworm ]; then ensure_backports; fi
    if ! apt-cache show "$pkg:arm64" >/dev/null 2>&1; then
        apt_update
    fi
    if ! apt-cache show "$pkg:arm64" >/dev/null 2>&1; then
        pkg=$(newest_kernel_pkg)
        [ -n "$pkg" ] || die "no linux-image-6.12.*+deb12-arm64 package in the apt sources"
        note "warning: $pinned_kernel_pkg is not in the archive any more; using $pkg"
    fi
    note "downloading $pkg:arm64 (about 90 MB) for its bcm2711-rpi-4-b.dtb"
    # apt's _apt user cannot write into our private temporary directory;
    # downloading as root is fine there, and saying so is noise.
    (cd "$dir" && quietly apt-get -o APT::Sandbox::User=root download "$pkg:arm64") ||
        die "could not download $pkg:arm64"
    deb=$(newest_file "$dir/${pkg}_*_arm64.deb")
    [ -n "$deb" ] || die "apt-get download of $pkg:arm64 left no .deb"
}

ensure_dtb() {
    is_dtb "$dtb" && return 0
    mkdir -p "$dtb_dir"
    local tmp
    deb=""
    tmp=$(mktemp -d "$cache/setup.XXXXXX")
    tmpdirs+=("$tmp")
    # Reuse a kernel package reflinux already fetched: the pinned one if it
    # is there, else the newest.
    if [ -d "$reflinux_debs" ]; then
        deb=$(newest_file "$reflinux_debs/${pinned_kernel_pkg}_*_arm64.deb")
        [ -n "$deb" ] ||
            deb=$(newest_file "$reflinux_debs/linux-image-6.12.*+deb12-arm64_*_arm64.deb")
        [ -z "$deb" ] || note "taking bcm2711-rpi-4-b.dtb from $(basename "$deb")"
    fi
    [ -n "$deb" ] || download_kernel_deb "$tmp"
    dpkg-deb --fsys-tarfile "$deb" |
        tar -xO --wildcards "./$dtb_in_pkg" >"$tmp/dtb" 2>/dev/null ||
        die "$(basename "$deb") has no $dtb_in_pkg"
    is_dtb "$tmp/dtb" || die "the bcm2711-rpi-4-b.dtb in $(basename "$deb") is not a device tree"
    mv "$tmp/dtb" "$dtb"
    # shellcheck disable=SC2016 # dpkg's own ${...} fields
    dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >"$dtb_dir/source"
    note "wrote ${dtb#"$repo"/}"
}

# ------------------------------------------------------------ the busybox
is_arm64_elf() {
    # ELF magic, 64-bit, little-endian; e_machine 183 (0xb7) is AArch64.
    [ -s "$1" ] && [ "$(od -An -tx1 -N6 "$1" | tr -d ' \n')" = 7f454c460201 ] &&
        [ "$(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n')" = b700 ]
}

ensure_busybox() {
    is_arm64_elf "$busybox" && return 0
    mkdir -p "$busybox_dir"
    if is_arm64_elf "$reflinux_busybox"; then
        note "taking busybox from ../shared/reflinux's cache"
        cp "$reflinux_busybox" "$busybox.tmp"
        echo "$busybox_pkg $(cat "$(dirname "$reflinux_busybox")/version" 2>/dev/null)" \
            >"$busybox_dir/source"
        mv "$busybox.tmp" "$busybox"
        return 0
    fi
    need_apt "Debian's static busybox is needed for tests/busybox.rs"
    ensure_arm64_arch
    local tmp deb
    tmp=$(mktemp -d "$cache/setup.XXXXXX")
    tmpdirs+=("$tmp")
    if ! apt-cache show "$busybox_pkg:arm64" >/dev/null 2>&1; then
        apt_update
    fi
    note "downloading $busybox_pkg:arm64"
    (cd "$tmp" && quietly apt-get -o APT::Sandbox::User=root download "$busybox_pkg:arm64") ||
        die "could not download $busybox_pkg:arm64"
    deb=$(newest_file "$tmp/${busybox_pkg}_*_arm64.deb")
    [ -n "$deb" ] || die "apt-get download of $busybox_pkg:arm64 left no .deb"
    dpkg-deb -x "$deb" "$tmp/x" || die "could not unpack $(basename "$deb")"
    is_arm64_elf "$tmp/x/bin/busybox" || die "$(basename "$deb") has no arm64 bin/busybox"
    mv "$tmp/x/bin/busybox" "$busybox"
    # shellcheck disable=SC2016 # dpkg's own ${...} fields
    dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >"$busybox_dir/source"
    note "wrote ${busybox#"$repo"/}"
}

# ------------------------------------------------- Debian's dynamic programs
debian_dir="$cache/debian"
debian_tar="$debian_dir/debian.tar"
debian_pkgs="libc6 bash coreutils strace libtinfo6 libselinux1 libpcre2-8-0 libacl1 libattr1"
# The programs tests/debian.rs runs (bash from /bin, coreutils from /bin and
# /usr/bin).
debian_progs="bash cat cp cut date echo env head ls md5sum mkdir nproc rm seq sleep sort stat strace tail timeout tr true wc"
# What the archive was packed from: a different list repacks it.
debian_stamp="$debian_pkgs / $debian_progs"

ensure_debian() {
    [ -s "$debian_tar" ] && [ "$(cat "$debian_dir/contents" 2>/dev/null)" = "$debian_stamp" ] && return 0
    need_apt "Debian's arm64 bash, coreutils and libc6 are needed for tests/debian.rs"
    ensure_arm64_arch
    local tmp deb pkg prog found
    tmp=$(mktemp -d "$cache/setup.XXXXXX")
    tmpdirs+=("$tmp")
    if ! apt-cache show bash:arm64 >/dev/null 2>&1; then
        apt_update
    fi
    note "downloading $debian_pkgs (arm64)"
    # shellcheck disable=SC2086 # one word per package
    (cd "$tmp" && quietly apt-get -o APT::Sandbox::User=root download $(printf '%s:arm64 ' $debian_pkgs)) ||
        die "could not download $debian_pkgs for arm64"
    : >"$tmp/source"
    for pkg in $debian_pkgs; do
        deb=$(newest_file "$tmp/${pkg}_*_arm64.deb")
        [ -n "$deb" ] || die "apt-get download of $pkg:arm64 left no .deb"
        dpkg-deb -x "$deb" "$tmp/x" || die "could not unpack $(basename "$deb")"
        # shellcheck disable=SC2016 # dpkg's own ${...} fields
        dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >>"$tmp/source"
    done
    mkdir -p "$tmp/root/usr/bin"
    (cd "$tmp/x" && cp -a --parents lib/ld-linux-aarch64.so.1 "$tmp/root/" &&
        find lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu -maxdepth 1 -name '*.so*' \
            -exec cp -a --parents {} "$tmp/root/" \;) ||
        die "the packages lack the dynamic linker or libraries"
    for prog in $debian_progs; do
        found=""
        for dir in bin usr/bin; do
            [ -e "$tmp/x/$dir/$prog" ] && found="$tmp/x/$dir/$prog"
        done
        [ -n "$found" ] || die "no $prog in $debian_pkgs"
        cp -a "$found" "$tmp/root/usr/bin/"
    done
    mkdir -p "$debian_dir"
    tar -C "$tmp/root" --owner=0 --group=0 -cf "$debian_tar.tmp" lib usr ||
        die "could not pack $debian_tar"
    mv "$tmp/source" "$debian_dir/source"
    mv "$debian_tar.tmp" "$debian_tar"
    echo "$debian_stamp" >"$debian_dir/contents"
    note "wrote ${debian_tar#"$repo"/}"
}

# ----------------------------------------------------------- gdbserver
gdbserver_dir="$cache/gdbserver"
gdbserver_tar="$gdbserver_dir/gdbserver.tar"
gdbserver_pkgs="gdbserver libstdc++6 libgcc-s1"

ensure_gdbserver() {
    [ -s "$gdbserver_tar" ] && [ "$(cat "$gdbserver_dir/contents" 2>/dev/null)" = "$gdbserver_pkgs" ] && return 0
    need_apt "Debian's arm64 gdbserver is needed for tests/gdbserver.rs"
    ensure_arm64_arch
    local tmp deb pkg
    tmp=$(mktemp -d "$cache/setup.XXXXXX")
    tmpdirs+=("$tmp")
    if ! apt-cache show gdbserver:arm64 >/dev/null 2>&1; then
        apt_update
    fi
    note "downloading $gdbserver_pkgs (arm64)"
    # shellcheck disable=SC2086 # one word per package
    (cd "$tmp" && quietly apt-get -o APT::Sandbox::User=root download $(printf '%s:arm64 ' $gdbserver_pkgs)) ||
        die "could not download $gdbserver_pkgs for arm64"
    : >"$tmp/source"
    for pkg in $gdbserver_pkgs; do
        deb=$(newest_file "$tmp/${pkg}_*_arm64.deb")
        [ -n "$deb" ] || die "apt-get download of $pkg:arm64 left no .deb"
        dpkg-deb -x "$deb" "$tmp/x" || die "could not unpack $(basename "$deb")"
        # shellcheck disable=SC2016 # dpkg's own ${...} fields
        dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >>"$tmp/source"
    done
    mkdir -p "$tmp/root/usr/bin"
    (cd "$tmp/x" && cp -a usr/bin/gdbserver "$tmp/root/usr/bin/" &&
        find lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu -maxdepth 1 -name '*.so*' \
            -exec cp -a --parents {} "$tmp/root/" \;) ||
        die "the packages lack gdbserver or its libraries"
    mkdir -p "$gdbserver_dir"
    tar -C "$tmp/root" --owner=0 --group=0 -cf "$gdbserver_tar.tmp" lib usr ||
        die "could not pack $gdbserver_tar"
    mv "$tmp/source" "$gdbserver_dir/source"
    mv "$gdbserver_tar.tmp" "$gdbserver_tar"
    echo "$gdbserver_pkgs" >"$gdbserver_dir/contents"
    note "wrote ${gdbserver_tar#"$repo"/}"
}

# ------------------------------------------------------- Debian's trace-cmd
trace_cmd_dir="$cache/trace-cmd"
trace_cmd_tar="$trace_cmd_dir/trace-cmd.tar"
trace_cmd_pkgs="trace-cmd libtraceevent1 libtraceevent1-plugin libtracefs1 libzstd1"
# Architecture-independent: shell scripts run by Debian's bash.
perf_tools_pkg="perf-tools-unstable"
trace_cmd_stamp="$trace_cmd_pkgs $perf_tools_pkg"

ensure_trace_cmd() {
    [ -s "$trace_cmd_tar" ] && [ "$(cat "$trace_cmd_dir/contents" 2>/dev/null)" = "$trace_cmd_stamp" ] && return 0
    need_apt "Debian's arm64 trace-cmd is needed for tests/trace_cmd.rs"
    ensure_arm64_arch
    local tmp deb pkg
    tmp=$(mktemp -d "$cache/setup.XXXXXX")
    tmpdirs+=("$tmp")
    if ! apt-cache show trace-cmd:arm64 >/dev/null 2>&1; then
        apt_update
    fi
    note "downloading $trace_cmd_pkgs (arm64) and $perf_tools_pkg"
    # shellcheck disable=SC2086 # one word per package
    (cd "$tmp" && quietly apt-get -o APT::Sandbox::User=root download \
        $(printf '%s:arm64 ' $trace_cmd_pkgs) "$perf_tools_pkg") ||
        die "could not download $trace_cmd_pkgs for arm64"
    : >"$tmp/source"
    for pkg in $trace_cmd_pkgs $perf_tools_pkg; do
        deb=$(newest_file "$tmp/${pkg}_*.deb")
        [ -n "$deb" ] || die "apt-get download of $pkg left no .deb"
        dpkg-deb -x "$deb" "$tmp/x" || die "could not unpack $(basename "$deb")"
        # shellcheck disable=SC2016 # dpkg's own ${...} fields
        dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >>"$tmp/source"
    done
    mkdir -p "$tmp/root"
    (cd "$tmp/x" && cp -a --parents usr/bin/trace-cmd usr/lib/aarch64-linux-gnu usr/sbin "$tmp/root/") ||
        die "the packages lack trace-cmd, its libraries or perf-tools' scripts"
    mkdir -p "$trace_cmd_dir"
    tar -C "$tmp/root" --owner=0 --group=0 -cf "$trace_cmd_tar.tmp" usr ||
        die "could not pack $trace_cmd_tar"
    mv "$tmp/source" "$trace_cmd_dir/source"
    mv "$trace_cmd_tar.tmp" "$trace_cmd_tar"
    echo "$trace_cmd_stamp" >"$trace_cmd_dir/contents"
    note "wrote ${trace_cmd_tar#"$repo"/}"
}

# ------------------------------------------------------------------- main
# SETUP_DONE=1: a caller ran this in full already (scripts/e2e.sh, before
# the hundred-odd boots of its tests, each of which would check it all
# again under the lock).
[ "$mode" = all ] && [ "${SETUP_DONE:-}" = 1 ] && exit 0
mkdir -p "$cache"
# Scratch directories the steps make, removed however the script ends.
tmpdirs=()
trap 'rm -rf "${tmpdirs[@]}"' EXIT
# One installer at a time: concurrent runs wait here, then find the work
# done.
exec 9>"$cache/setup.lock"
flock 9 || die "could not lock $cache/setup.lock"

case $mode in
    dtb) ensure_dtb; echo "$dtb"; exit 0 ;;
    busybox) ensure_busybox; echo "$busybox"; exit 0 ;;
    debian) ensure_debian; echo "$debian_tar"; exit 0 ;;
    gdbserver) ensure_gdbserver; echo "$gdbserver_tar"; exit 0 ;;
    trace_cmd) ensure_trace_cmd; echo "$trace_cmd_tar"; exit 0 ;;
esac
ensure_ca_certificates
ensure_toolchain
ensure_host_cc
ensure_qemu
ensure_cross_gcc
ensure_dtb
ensure_busybox
ensure_debian
ensure_gdbserver
ensure_trace_cmd
ensure_program xz xz-utils "tar -J unpacks Linux's source, linux-source-6.12.tar.xz"
ensure_program cpio cpio "tools/mkinitramfs's test lists its archives with GNU cpio"
"$repo/scripts/ftracetest-fetch.sh" >/dev/null || die "could not fetch Linux's ftracetest"
"$repo/scripts/arm64-selftests.sh" build >/dev/null || die "could not build Linux's arm64 selftests"
