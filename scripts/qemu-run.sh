#!/usr/bin/env bash
# Builds the kernel and boots it under qemu-system-aarch64.
#
#   scripts/qemu-run.sh [--machine virt|raspi4b] [--smp N] [--mem SIZE]
#                       [--append 'BOOTARGS'] [--timeout SECONDS] [--gdb]
#                       [--test] [--kernel IMAGE] [--no-dtb] [--log FILE]
#                       [--root PATH]... [FILE...] [-- 'SHELL COMMANDS']
#
# Defaults: virt, 4 CPUs, cortex-a72, 1G. The initramfs holds init, sh and
# the utilities; each FILE is copied into its /bin.
#
# Without `--`: interactive; init starts a shell on the console (Ctrl-A X
# quits QEMU). With --timeout, QEMU is stopped after that many seconds and
# the exit status is 124, as with timeout(1).
#
# With `-- 'COMMANDS'`: the commands run in the shell with stdin from
# /dev/null; stdout carries only what they print (the boot log goes to a
# file named on stderr) and the exit status is theirs: the same interface
# as ../shared/reflinux/run.sh. 124 on timeout, 125 if the machine did not
# boot or crashed before the commands finished.
#
#   --gic 2|3      virt only: interrupt controller version (default 2)
#   --el2          virt only: enter the kernel at EL2 (as on a Pi)
#   --cpu MODEL    virt only: QEMU CPU model (default cortex-a72; `max`
#                  has PAN, which the kernel then turns on)
#   --test         boot the in-kernel test build (feature ktest); its exit
#                  status is the tests' verdict (0 = all passed)
#   --kernel IMG   boot IMG as is (no kernel build)
#   --no-dtb       raspi4b only: pass no device tree (to see the kernel say so)
#   --log FILE     where the boot log goes in command mode
#   --gdb          start QEMU's gdb stub, halted; prints how to attach
#   --root PATH    add PATH's contents at the guest's / (repeatable): PATH is
#                  a directory or a .tar, .tar.gz/.tgz or newc .cpio archive.
#                  Files, directories, symlinks, devices and modes are kept
#                  (a directory's entries are owned by root, an archive's
#                  keep their ids); hard links become copies. It is packed
#                  on the host into the one initramfs, so the guest unpacks
#                  nothing. A path in several places takes the last one's
#                  entry (--root over FILEs, a later --root over an earlier);
#                  a directory in several places merges. Refused: names with
#                  '..' or a leading '/', a directory meeting a non-directory,
#                  a path below a symlink, FIFOs and sockets.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
machine=virt cpu=cortex-a72 gic=2 el2=off smp=4 mem=1G append="" timeout_s="" gdb=0 test=0 kernel="" no_dtb=0 log=""
files=() roots=() cmds="" have_cmds=0

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; }
die() { echo "qemu-run: error: $*" >&2; exit 125; }

while [ $# -gt 0 ]; do
    case "$1" in
        --machine) machine=${2:?}; shift 2 ;;
        --machine=*) machine=${1#*=}; shift ;;
        --cpu) cpu=${2:?}; shift 2 ;;
        --gic) gic=${2:?}; shift 2 ;;
        --el2) el2=on; shift ;;
        --smp) smp=${2:?}; shift 2 ;;
        --smp=*) smp=${1#*=}; shift ;;
        --mem) mem=${2:?}; shift 2 ;;
        --mem=*) mem=${1#*=}; shift ;;
        --append) append=${2?}; shift 2 ;;
        --append=*) append=${1#*=}; shift ;;
        --timeout) timeout_s=${2:?}; shift 2 ;;
        --timeout=*) timeout_s=${1#*=}; shift ;;
        --log) log=${2:?}; shift 2 ;;
        --gdb) gdb=1; shift ;;
        --test) test=1; shift ;;
        --kernel) kernel=${2:?}; shift 2 ;;
        --no-dtb) no_dtb=1; shift ;;
        --root) roots+=("${2:?}"); shift 2 ;;
        --root=*) roots+=("${1#*=}"); shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; have_cmds=1; cmds=$*; shift $# ;;
        -*) usage; die "unknown option: $1" ;;
        *) files+=("$1"); shift ;;
    esac
done
case "$machine" in virt|raspi4b) ;; *) die "--machine must be virt or raspi4b" ;; esac
case "$gic" in 2|3) ;; *) die "--gic must be 2 or 3" ;; esac
[[ "$smp" =~ ^[1-8]$ ]] || die "--smp must be 1..8"
[ -z "$timeout_s" ] || [[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
for f in ${files[@]+"${files[@]}"}; do
    [ -f "$f" ] || die "no such file: $f"
done
for r in ${roots[@]+"${roots[@]}"}; do
    [ -e "$r" ] || die "--root: no such directory or archive: $r"
    [ "$test" = 0 ] || die "--root: the --test image boots without an initramfs"
done

"$root/scripts/setup.sh" >&2

cd "$root"
if [ -z "$kernel" ]; then
    build_args=()
    [ "$test" = 1 ] && build_args+=(--test)
    kernel=$(cargo run --quiet --release -p kbuild -- ${build_args[@]+"${build_args[@]}"})
fi
[ -f "$kernel" ] || die "no kernel image at $kernel"

work=$(mktemp -d "${TMPDIR:-/tmp}/qemu-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
token=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
initrd_args=(-o "$work/initramfs.cpio")
if [ "$have_cmds" = 1 ]; then
    printf '%s\n' "$cmds" > "$work/cmd.sh"
    # Markers around the commands, so that only their output is shown. As
    # reflinux does, kernel messages stay off the console meanwhile
    # (dmesg -n 1) and are copied into the log afterwards.
    {
        echo "dmesg --new > /dev/null; dmesg -n 1"
        echo "echo @@@QEMURUN-BEGIN-$token@@@"
        echo "sh /etc/cmd.sh < /dev/null"
        echo "echo -n \"@@@QEMURUN-END-$token rc=\$?@@@\""
        echo "echo; echo qemu-run: kernel messages logged during the commands:; dmesg --new; echo qemu-run: end of kernel messages; dmesg -n 7"
    } > "$work/rc"
    initrd_args+=(--rc "$work/rc" --cmd "$work/cmd.sh")
fi
for r in ${roots[@]+"${roots[@]}"}; do
    initrd_args+=(--root "$(cd "$(dirname "$r")" && pwd)/$(basename "$r")")
done
for f in ${files[@]+"${files[@]}"}; do
    initrd_args+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
if [ "$test" = 0 ]; then
    cargo run --quiet --release -p kbuild -- initramfs "${initrd_args[@]}" > /dev/null ||
        die "could not build the initramfs"
fi

qemu=(qemu-system-aarch64 -nographic -no-reboot -semihosting-config enable=on,target=native)
case "$machine" in
    virt)
        qemu+=(-M "virt,gic-version=$gic,virtualization=$el2" -cpu "$cpu" -smp "$smp" -m "$mem" -nic none) ;;
    raspi4b)
        # The board has 4 cores and fixed memory; QEMU makes no device tree.
        [ "$smp" = 4 ] || echo "qemu-run: raspi4b always has 4 CPUs; ignoring --smp $smp" >&2
        qemu+=(-M raspi4b)
        if [ "$no_dtb" = 0 ]; then
            qemu+=(-dtb "$("$root/scripts/setup.sh" --print-dtb)")
        fi ;;
esac
qemu+=(-kernel "$kernel")
[ "$test" = 0 ] && qemu+=(-initrd "$work/initramfs.cpio")
[ -n "$append" ] && qemu+=(-append "$append")
if [ "$gdb" = 1 ]; then
    qemu+=(-s -S)
    echo "qemu-run: gdb stub on :1234, CPU halted. Attach with:" >&2
    echo "  gdb-multiarch $(dirname "$kernel")/kernel.elf -ex 'target remote :1234'" >&2
fi

if [ "$have_cmds" = 0 ]; then
    if [ -n "$timeout_s" ]; then
        set +e
        timeout --foreground -k 5 "$timeout_s" "${qemu[@]}" < /dev/null
        exit $?
    fi
    exec "${qemu[@]}"
fi

# Command mode: boot log to a file, the commands' output to stdout.
if [ -z "$log" ]; then
    mkdir -p "$root/target/logs"
    log="$root/target/logs/qemu-run-$(date +%Y%m%d-%H%M%S)-$$.log"
fi
echo "qemu-run: boot log: $log" >&2
set +e
timeout -k 5 "${timeout_s:-300}" "${qemu[@]}" < /dev/null > "$log" 2>&1
qrc=$?
set -e
exec 3>&1
status=$(perl -e '
    my ($log, $tok) = @ARGV;
    open(my $fh, "<:raw", $log) or die; local $/; my $s = <$fh>;
    my $b = index($s, "\@\@\@QEMURUN-BEGIN-$tok\@\@\@");
    if ($b < 0) { print STDERR "noboot\n"; exit 0 }
    my $start = index($s, "\n", $b) + 1;
    my $e = index($s, "\@\@\@QEMURUN-END-$tok rc=", $start);
    my $out = substr($s, $start, ($e < 0 ? length($s) : $e) - $start);
    $out =~ s/\r\n/\n/g;
    binmode STDOUT; print $out;
    if ($e < 0) { print STDERR "noend\n"; exit 0 }
    substr($s, $e) =~ /rc=(\d+)\@\@\@/;
    print STDERR "rc $1\n";
' "$log" "$token" 2>&1 >&3)
exec 3>&-
case "$status" in
    "rc "*) exit "${status#rc }" ;;
esac
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
    echo "qemu-run: error: timeout: qemu killed after ${timeout_s:-300} s; log: $log" >&2
    exit 124
fi
echo "qemu-run: error: the commands did not finish ($status, qemu exit status $qrc); last lines of $log:" >&2
tail -n 25 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
exit 125
