# Run by Debian's bash (tests/debian.rs), on this kernel and on real Linux:
# bash's own features, then coreutils; the output must be the same.
set -u
cd /tmp
square() { local n=$1; echo "square($n) = $((n * n))"; }
for i in 1 2 3; do square "$i"; done
words=$(echo one two three | tr ' ' '\n' | sort | head -2 | tr '\n' ,)
echo "words=$words"
cat <<END | wc -l
a
b
c
END
read -r x y <<< "left right"; echo "$y $x"
trap 'echo trapped USR1' USR1; kill -USR1 $$
( sleep 0.1; echo background done ) & wait $!; echo "wait status $?"
sleep 5 & kill $!; wait $!; echo "killed status $?"
# Job control in a script: jobs, %N, kill, fg, a job that stops itself
# and bg.
# Each step waits for a state the script can see, never for a time:
# under load a timed job could end before `fg` reaches it, and a job
# killed with %N may be reaped and forgotten before `wait %N` (Linux's
# bash then says "no such job"), so the kill is waited for by pid.
set -m
sleep 5 &
p=$!
jobs
kill %+
wait $p; echo "killed %+ status $?"
( kill -STOP $BASHPID; echo "fg job done" ) &
until jobs -l | busybox grep -q Stopped; do sleep 0.1; done
fg %+ >/dev/null; echo "fg status $?"
( kill -STOP $BASHPID; echo "continued" ) &
until jobs -l | busybox grep -q Stopped; do sleep 0.1; done
jobs -l | busybox sed 's/+ *[0-9]* Stopped/+ PID Stopped/'
bg %+ >/dev/null; wait; echo "bg done"
set +m
n=0; while [ $n -lt 100 ]; do n=$((n + 1)); done; echo "counted $n"
seq 1 20 | sort -rn | head -3 | tr '\n' ' '; echo
seq 10 | tail -n 2
echo hello | md5sum
printf 'a:b:c\nd:e:f\n' | cut -d: -f2
mkdir -p d/e/f && echo data > d/e/f/file && cp d/e/f/file d/copy && cat d/copy
stat -c '%s %F %a %h' d/copy d/e d/e/f/file
rm -r d && test ! -e d && echo removed
ls -l /usr/lib/aarch64-linux-gnu | busybox grep -v "^l"
# No date: busybox tar (reflinux) leaves a symlink dated now, an initramfs
# entry (qemu-run --root) keeps the archive's date, and ls writes a date
# more than six months away with one field fewer.
ls -l --time-style=+@ /lib/ld-linux-aarch64.so.1 | cut -d' ' -f1,7-
date -u -d @86400 '+%Y-%m-%d %H:%M:%S'
env -i A=1 B=2 /usr/bin/env
timeout 0.5 sleep 5; echo "timeout status $?"
wc -c < /usr/bin/bash
echo "nproc $(nproc) $(busybox nproc)"
mkdir /tmp/bb && busybox --install -s /tmp/bb && echo "installed $(ls /tmp/bb | wc -l) applets, ls -> $(busybox readlink /tmp/bb/ls)"
# The ELF interpreter's layout: glibc's loader prints the auxiliary vector
# of the very process whose maps cat prints.
LD_SHOW_AUXV=1 /usr/bin/cat /proc/self/maps > /tmp/auxmaps
LD_SHOW_AUXV=1 /usr/bin/true | busybox sed -e 's/0x[0-9a-f]\{8,\}/ADDR/' -e '/^AT_HWCAP:/d'
aux() { busybox awk -v k="$1:" '$1 == k { print $2 }' /tmp/auxmaps; }
first_map() { busybox awk -v f="$1" '$6 == f { split($1, r, "-"); print r[1], r[2]; exit }' /tmp/auxmaps; }
read -r exe_lo exe_hi <<< "$(first_map /usr/bin/cat)"
read -r ld_lo ld_hi <<< "$(first_map /lib/aarch64-linux-gnu/ld-linux-aarch64.so.1)"
phdr=$(( $(aux AT_PHDR) )); entry=$(( $(aux AT_ENTRY) )); base=$(( $(aux AT_BASE) ))
echo "AT_PHDR is the program's first page + 0x40: $(( phdr == 16#$exe_lo + 0x40 ))"
echo "AT_ENTRY is in the program's text: $(( entry > 16#$exe_lo && entry < 16#$exe_hi ))"
echo "AT_BASE is the interpreter's first page: $(( base == 16#$ld_lo ))"
echo "the interpreter lies above the program: $(( 16#$ld_lo > 16#$exe_hi ))"
echo "AT_EXECFN: $(aux AT_EXECFN)"
