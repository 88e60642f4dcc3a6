# scripts/ftracetest-guest.sh - runs inside the guest (this kernel or
# ../shared/reflinux), started by scripts/ftracetest.sh as
#
#   /bin/busybox sh /bin/ftracetest-guest.sh [--show-logs] TARGET...
#
# with Debian's static busybox in /bin/busybox and the unmodified selftests
# in /bin/ftrace.tar (scripts/ftracetest-fetch.sh --tar).  TARGETs are
# ftracetest's own arguments: test.d/<dir> or test.d/<dir>/<test>.tc.
#
# ftracetest is a #!/bin/sh script that calls ~40 external programs
# (grep, sed, cut, mktemp, find, sort, sleep, id, ...).  They all come from
# busybox, installed into a directory put first on PATH: as symbolic links
# when the kernel can make them, otherwise (this kernel has no symlink(2) or
# link(2) yet) as copies of the binary under the names the tests use.
# ftracetest itself runs under busybox sh too, never the project's own sh.
#
# Output: ftracetest's console lines as they come, then one line per test
#   @@ftracetest RESULT PATH
# (PATH relative to test.d, with " (instance)" appended for the second
# pass ftracetest makes over `flags: instance` tests inside an instance),
# each followed by `@@ftracetest-secs SECONDS PATH` (how long the test
# took), then `@@ftracetest-end rc=N SECONDS`.  With --show-logs, the log of every
# test that neither passed nor was unsupported follows, between
# `@@ftracetest-log PATH` and `@@ftracetest-log-end` lines (their last
# $FTRACETEST_LOG_LINES lines, default 60: on Linux, with its thousands of
# events, the set -x trace of initialize_ftrace alone is 100 KB).
bb=/bin/busybox
work=/tmp/ftracetest-run
show_logs=0
log_lines=${FTRACETEST_LOG_LINES:-60}
if [ "${1:-}" = --show-logs ]; then
    show_logs=1
    shift
fi

$bb rm -rf $work
$bb mkdir -p $work/bin || exit 125
if ! $bb --install -s $work/bin 2>/dev/null || [ ! -x $work/bin/grep ]; then
    # No symbolic links: copies, for what ftracetest, test.d/functions and
    # the tests call (the rest of the ~270 applets would take 500 MB).
    for a in awk basename cat chmod cp cut date dd dirname echo egrep env \
        expr false fgrep find grep head id insmod kill ln ls lsmod mkdir \
        mktemp modprobe mount mv od printf ps pwd readlink realpath rm \
        rmdir rmmod sed seq sh sleep sort stat tac tail tar tee test timeout \
        touch tr true umount uname uniq unlink usleep wc which xargs yes; do
        $bb cp $bb $work/bin/$a || exit 125
    done
fi
PATH=$work/bin:$PATH
export PATH

# The ownership tests (00basic/test_ownership.tc, mount_options.tc) look
# for a user and a group other than root's in /etc/passwd and /etc/group,
# as any installed system has; these minimal boots have neither file.
[ -e /etc/passwd ] || printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > /etc/passwd
[ -e /etc/group ] || printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > /etc/group

cd $work || exit 125
$bb tar xf /bin/ftrace.tar || exit 125
cd ftrace || exit 125
start=$(date +%s)
# -k keeps every test's log, which names the test file; -l avoids the
# `logs/latest` symbolic link.
sh ./ftracetest -k -l $work/logs "$@"
rc=$?
end=$(date +%s)

# No ftracetest.log: ftracetest stopped before its first test (no tracefs,
# for one); the host reports every test as not run.
[ -f $work/logs/ftracetest.log ] || { echo "@@ftracetest-end rc=$rc $((end - start))"; exit 0; }

# Case number -> result, from ftracetest's own log; case number -> test
# file, from the first line of each test's log ("execute: PATH" or
# "execute (instance) : PATH").
# The time each test took: each log is written until its test ends, so
# the gaps between their modification times (seconds).
stat -c '%Y %n' $work/logs/*-log.* > $work/mtimes
awk -v logs=$work/logs -v start=$start '
    FILENAME == ARGV[1] {
        if (match($0, /^\[[0-9]+\]/) && match($0, /\t\[[A-Z]+\]$/)) {
            n = substr($0, 2, index($0, "]") - 2)
            r = substr($0, RSTART + 2, RLENGTH - 3)
            result[n] = r
        }
        next
    }
    FILENAME == ARGV[2] {
        f = $2
        sub(/.*\//, "", f)
        mtime[substr(f, 1, index(f, "-") - 1)] = $1
        next
    }
    FNR == 1 {
        f = FILENAME
        sub(/.*\//, "", f)
        n = substr(f, 1, index(f, "-") - 1)
        path = $NF
        sub(/.*\/test\.d\//, "", path)
        if ($0 ~ /^execute \(instance\)/) path = path " (instance)"
        paths[n] = path
        files[n] = FILENAME
        if (n + 0 > last) last = n + 0
    }
    END {
        for (n = 1; n <= last; n++) {
            if (!(n in paths)) continue
            r = (n in result) ? result[n] : "UNKNOWN"
            print "@@ftracetest " r " " paths[n]
            if (n in mtime) {
                print "@@ftracetest-secs " mtime[n] - start " " paths[n]
                start = mtime[n]
            }
            if (r != "PASS" && r != "UNSUPPORTED")
                print files[n] "\t" paths[n] > (logs "/not-passed")
        }
    }' $work/logs/ftracetest.log $work/mtimes $work/logs/*-log.*

if [ $show_logs = 1 ] && [ -f $work/logs/not-passed ]; then
    while IFS="	" read -r file path; do
        echo "@@ftracetest-log $path"
        tail -n "$log_lines" "$file"
        echo "@@ftracetest-log-end"
    done < $work/logs/not-passed
fi
echo "@@ftracetest-end rc=$rc $((end - start))"
