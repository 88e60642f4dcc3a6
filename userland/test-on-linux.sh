#!/bin/bash
# userland/test-on-linux.sh - prove the user programs on real Linux arm64.
#
# Builds the userland, boots the reference Linux kernel once with
# ../shared/reflinux/run.sh and runs every check below in it; each check
# compares the exact output (stdout and stderr together) and exit status.
# Exits non-zero on any mismatch; skips (exit 0) when reflinux is absent.
#
# In the guest, busybox owns /bin (its `sh` runs the harness), so the
# programs are shipped as /bin/u-NAME and copied to /u/NAME; checks run
# with PATH=/u, so every command they name is ours.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
reflinux="$root/../shared/reflinux/run.sh"
if [ ! -x "$reflinux" ]; then
    echo "test-on-linux: SKIP: $reflinux not found (no reference Linux to run on)"
    exit 0
fi

programs=(init sh cat ls echo true false poweroff)
(cd "$root" && cargo build --release -p rt -p init -p sh -p utils --target aarch64-unknown-none)
bin="$root/target/aarch64-unknown-none/release"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for p in "${programs[@]}"; do cp "$bin/$p" "$stage/u-$p"; done

names=()
declare -A want_out want_rc
n=0
# check NAME KIND BODY WANT_OUTPUT WANT_STATUS
#   KIND "sh": BODY is a script run by our sh (`/u/sh FILE`, PATH=/u);
#   KIND "bb": BODY is run by busybox sh (for init and poweroff).
check() {
    local name file
    name=$(printf '%02d-%s' "$n" "$1")
    n=$((n + 1))
    case "$2" in
        sh) file="$stage/t-$name.sh" ;;
        bb) file="$stage/b-$name.sh" ;;
        *) echo "bad kind $2" >&2; exit 2 ;;
    esac
    printf '%s\n' "$3" > "$file"
    names+=("$name")
    want_out[$name]=$4
    want_rc[$name]=$5
}

# ------------------------------------------------------------------ sh
check echo sh 'echo hello   world' $'hello world\n' 0
check echo-n sh 'echo -n a; echo -n -n b; echo c' $'abc\n' 0
check quotes sh 'X=1; echo '"'"'single $X'"'"' "double $X" ${X}y $X\$ "a\"b"' \
    $'single $X double 1 1y 1$ a"b\n' 0
check field-splitting sh 'A="1  2"; echo $A; echo "$A"; echo ${A}z; E=; echo [$E] "[$E]"' \
    $'1 2\n1  2\n1 2z\n[] []\n' 0
check pipeline sh 'echo hi | cat | cat | cat' $'hi\n' 0
check long-pipeline sh 'echo x | cat | cat | cat | cat | cat | cat | cat | cat | cat | cat | cat | cat' $'x\n' 0
check pipeline-status sh 'false | true; echo $?; true | false; echo $?' $'0\n1\n' 0
check not-found sh 'nosuchcmd arg; echo $?; /nope/cmd; echo $?' \
    $'sh: nosuchcmd: not found\n127\nsh: /nope/cmd: not found\n127\n' 0
check redirections sh 'echo one > /tmp/f; echo two >> /tmp/f; cat < /tmp/f; cat /tmp/f | cat; echo three > /tmp/f; cat /tmp/f' \
    $'one\ntwo\none\ntwo\nthree\n' 0
check fd-redirections sh 'cat /nope 2>/dev/null; echo $?; cat /nope 2>&1 | cat; echo err >&2' \
    $'1\ncat: /nope: No such file or directory\nerr\n' 0
check redirect-error sh 'cat < /nope; echo $?; echo x > /nope/f; echo $?' \
    $'sh: can\'t open /nope: No such file or directory\n1\nsh: can\'t create /nope/f: No such file or directory\n1\n' 0
check and-or sh 'true && echo a || echo b; false && echo c || echo d; false || false && echo e; echo $?' \
    $'a\nd\n1\n' 0
check negation sh '! false; echo $?; ! true; echo $?' $'0\n1\n' 0
check signal-status sh 'sh -c '"'"'/bin/kill -9 $$'"'"'; echo $?' $'137\n' 0
check exit-status sh 'sh -c "exit 3"; echo $?; exit 42; echo not here' $'3\n' 42
check cd-pwd sh 'cd /tmp && pwd; cd /nope; echo $?; cd; pwd' \
    $'/tmp\nsh: cd: can\'t cd to /nope: No such file or directory\n1\n/root\n' 0
check export sh 'export FOO=bar; sh -c '"'"'echo $FOO'"'"'; BAZ=q sh -c '"'"'echo $BAZ'"'"'; echo "[$BAZ]"; L=local; sh -c '"'"'echo "[$L]"'"'"'' \
    $'bar\nq\n[]\n[]\n' 0
check braces-home sh 'V=val; echo ${V}ue ~ ~/x "$HOME"' $'value /root /root/x /root\n' 0
check script-args sh 'echo '"'"'echo "$0 $# $1 $2"; exit 5'"'"' > /tmp/s; sh /tmp/s a b; echo $?' \
    $'/tmp/s 2 a b\n5\n' 0
check dash-c-args sh 'sh -c '"'"'echo $0 $1 $#'"'"' zero one' $'zero one 1\n' 0
check stdin-script sh 'echo '"'"'echo from stdin; exit 4'"'"' | sh; echo $?' $'from stdin\n4\n' 0
check stdin-not-overread sh '/bin/busybox printf '"'"'cat\nline two\necho after\n'"'"' > /tmp/in; sh < /tmp/in' $'line two\necho after\n' 0
check multiline sh $'echo a # a comment\n\necho b;echo c\necho d |\ncat\necho "x\ny"' $'a\nb\nc\nd\nx\ny\n' 0
check script-without-shebang sh 'echo '"'"'echo script ran $1'"'"' > /tmp/x; /bin/chmod +x /tmp/x; /tmp/x arg' \
    $'script ran arg\n' 0
check syntax-error sh 'echo a | ; echo b' $'sh: syntax error: unexpected ";"\n' 2
check unterminated sh 'echo "abc' $'sh: syntax error: unterminated quoted string\n' 2
check missing-script sh 'sh /nope.sh; echo $?' $'sh: can\'t open \'/nope.sh\': No such file or directory\n127\n' 0

# ---------------------------------------------------------- utilities
check cat sh 'echo abc > /tmp/c; cat /tmp/c - /tmp/c < /tmp/c; echo xyz | cat - ; cat < /tmp/c' $'abc\nabc\nabc\nxyz\nabc\n' 0
check cat-errors sh 'echo ok > /tmp/c; cat /nope /tmp/c /; echo $?' \
    $'cat: /nope: No such file or directory\nok\ncat: /: Is a directory\n1\n' 0
check echo-program sh '/u/echo -n x; /u/echo a  b "c  d"; /u/echo' $'xa b c  d\n\n' 0
check true-false sh 'true; echo $?; false; echo $?' $'0\n1\n' 0
check ls sh '/bin/mkdir -p /tmp/d/sub; echo hi > /tmp/d/b; echo > /tmp/d/.h; echo -n > /tmp/d/a; cd /tmp/d; ls; ls -a; ls -a . /tmp/d/b sub' \
    $'a\nb\nsub\n.\n..\n.h\na\nb\nsub\n/tmp/d/b\n\n.:\n.\n..\n.h\na\nb\nsub\n\nsub:\n.\n..\n' 0
check ls-l sh '/bin/mkdir /tmp/e; echo hi > /tmp/e/b; echo -n > /tmp/e/a; echo 123456789 > /tmp/e/c; /bin/chmod 4755 /tmp/e/c; /bin/ln -s b /tmp/e/l; ls -l /tmp/e' \
    $'-rw-r--r--  0 a\n-rw-r--r--  3 b\n-rwsr-xr-x 10 c\nlrwxrwxrwx  1 l -> b\n' 0
check ls-errors sh 'ls /nope; echo $?; ls -z; echo $?' \
    $'ls: cannot access \'/nope\': No such file or directory\n2\nls: invalid option -- \'z\'\nusage: ls [-l] [-a] [PATH]...\n2\n' 0

# On a terminal (the console) sh is interactive: it prompts with "# " on
# stderr and waits for a line; SIGTERM ends it.
check interactive-prompt bb '/u/sh < /dev/console > /tmp/o 2>&1 & sleep 0.5; kill $!; wait $! 2>/dev/null; echo rc=$?; cat /tmp/o; echo' \
    $'rc=143\n# \n' 0

# ------------------------------------------------- init and poweroff
# Without CAP_SYS_BOOT in the initial namespace (a user namespace), reboot
# fails with EPERM.
check poweroff-eperm bb 'unshare -U /u/poweroff; echo rc=$?' $'poweroff: Operation not permitted\nrc=1\n' 0
check init-not-pid1 bb '/u/init; echo rc=$?' $'init: must be run as PID 1\nrc=1\n' 0
# As PID 1 of a new PID namespace, with our programs bound over /bin: init
# runs `/bin/sh /etc/rc`, then reboot(POWER_OFF), which in a child PID
# namespace ends its init with SIGINT: 128 + 2.
check init-rc bb 'echo "echo rc ran; echo \$PATH; ls /etc" > /etc/rc
unshare -m -p -f --mount-proc sh -c "mount --bind /u /bin && exec /u/init"; echo rc=$?; rm /etc/rc' \
    $'rc ran\n/bin:/sbin:/usr/bin\nrc\nrc=130\n' 0

# ------------------------------------------------------------ run them
guest='mkdir /u
for f in /bin/u-*; do cp "$f" "/u/${f#/bin/u-}"; done
cd /root
for f in /bin/t-*.sh /bin/b-*.sh; do
    n=${f#/bin/?-}; n=${n%.sh}
    case $f in
        /bin/t-*) (cd /root && PATH=/u HOME=/root /u/sh "$f") > /tmp/out 2>&1 ;;
        *) (cd /root && sh "$f") > /tmp/out 2>&1 ;;
    esac
    rc=$?
    printf "@@BEGIN %s\n" "$n"
    cat /tmp/out
    printf "\n@@END %s rc=%d\n" "$n" "$rc"
done'
out="$stage/guest.out"
set +e
"$reflinux" --timeout 120 "$stage"/u-* "$stage"/t-*.sh "$stage"/b-*.sh -- "$guest" > "$out"
rrc=$?
set -e
if [ $rrc != 0 ]; then
    echo "test-on-linux: FAIL: reflinux run failed with status $rrc" >&2
    cat "$out" >&2
    exit 1
fi

fail=0
for name in "${names[@]}"; do
    got_file="$stage/got.$name"
    perl -e '
        my ($file, $name) = @ARGV;
        open(my $fh, "<:raw", $file) or die; local $/; my $s = <$fh>;
        if ($s =~ /\@\@BEGIN \Q$name\E\n(.*?)\n\@\@END \Q$name\E rc=(\d+)\n/s) {
            binmode STDOUT; print "$2\n$1";
        } else { print "missing\n"; }
    ' "$out" "$name" > "$got_file"
    got_rc=$(head -n 1 "$got_file")
    got_out=$(tail -n +2 "$got_file"; echo .)
    got_out=${got_out%.}
    if [ "$got_rc" = "${want_rc[$name]}" ] && [ "$got_out" = "${want_out[$name]}" ]; then
        echo "ok   $name"
    else
        fail=1
        echo "FAIL $name"
        echo "  want status ${want_rc[$name]}, output:"
        printf '%s' "${want_out[$name]}" | sed 's/^/    | /'
        echo "  got status $got_rc, output:"
        printf '%s' "$got_out" | sed 's/^/    | /'
    fi
done
if [ $fail != 0 ]; then
    echo "test-on-linux: FAILED"
    exit 1
fi
echo "test-on-linux: all ${#names[@]} checks passed on Linux"
