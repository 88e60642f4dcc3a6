/* tests/trace_cmd/tcmdload.c - the workload tests/trace_cmd.rs records
 * with Debian's trace-cmd: five getpid system calls, each followed by a
 * 2 ms sleep, except the third, followed by 200 ms: a gap longer than the
 * 27-bit time delta of a ring-buffer event (134 ms), so that the CPU's
 * page holds a time extend. The trace holds five sys_enter_getpid events
 * and five calls of __arm64_sys_getpid, on any kernel. Built with
 * aarch64-linux-gnu-gcc -static. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct timespec pause = { 0, 2000000 };
	struct timespec long_pause = { 0, 200000000 };

	for (int i = 0; i < 5; i++) {
		syscall(SYS_getpid);
		nanosleep(i == 2 ? &long_pause : &pause, NULL);
	}
	return 0;
}
