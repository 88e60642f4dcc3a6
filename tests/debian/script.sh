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
n=0; while [ $n -lt 100 ]; do n=$((n + 1)); done; echo "counted $n"
seq 1 20 | sort -rn | head -3 | tr '\n' ' '; echo
seq 10 | tail -n 2
echo hello | md5sum
printf 'a:b:c\nd:e:f\n' | cut -d: -f2
mkdir -p d/e/f && echo data > d/e/f/file && cp d/e/f/file d/copy && cat d/copy
stat -c '%s %F %a %h' d/copy d/e d/e/f/file
rm -r d && test ! -e d && echo removed
ls -l /usr/lib/aarch64-linux-gnu | busybox grep -v "^l"
ls -l /lib/ld-linux-aarch64.so.1 | cut -d' ' -f1,9-
date -u -d @86400 '+%Y-%m-%d %H:%M:%S'
env -i A=1 B=2 /usr/bin/env
timeout 0.5 sleep 5; echo "timeout status $?"
wc -c < /usr/bin/bash
echo "nproc $(nproc) $(busybox nproc)"
mkdir /tmp/bb && busybox --install -s /tmp/bb && echo "installed $(ls /tmp/bb | wc -l) applets, ls -> $(busybox readlink /tmp/bb/ls)"
