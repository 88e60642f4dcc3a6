/*
 * tests/debian/straceinj.c - what tests/debian.rs runs under Debian's
 * `strace -e inject=... -e signal=SIGUSR1`: two opens of "/" (strace fails
 * the second with ENOENT), a getpid (strace makes it return 42), then
 * SIGUSR1 and SIGUSR2 to itself, both handled (strace shows only the
 * first). It prints what the calls returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught += sig;
}

int main(void)
{
	char line[128];
	int a, b, err, n;
	long pid;

	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	a = open("/", O_RDONLY);
	b = open("/", O_RDONLY);
	err = errno;
	pid = getpid();
	raise(SIGUSR1);
	raise(SIGUSR2);
	n = snprintf(line, sizeof(line), "open %d %d errno %d getpid %ld caught %d\n",
		     a, b, err, pid, (int)caught);
	write(1, line, n);
	return 0;
}
