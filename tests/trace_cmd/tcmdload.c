/* tests/trace_cmd/tcmdload.c - the workload tests/trace_cmd.rs records
 * with Debian's trace-cmd: five getpid system calls, each followed by a
 * 2 ms sleep, so that the trace holds five sys_enter_getpid events, five
 * calls of __arm64_sys_getpid and five sched_switch events of this task
 * going to sleep, on any kernel. Built with aarch64-linux-gnu-gcc -static. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct timespec pause = { 0, 2000000 };

	for (int i = 0; i < 5; i++) {
		syscall(SYS_getpid);
		nanosleep(&pause, NULL);
	}
	return 0;
}
