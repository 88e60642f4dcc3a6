/*
 * tests/debian/stracethr.c - what tests/debian.rs runs under Debian's
 * `strace -f` and `strace -ff`: a second thread that sleeps 500 ms (so that
 * the first one is certainly waiting in pthread_join's futex by then),
 * writes a line and ends; the first thread joins it and writes a line.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static void *thread(void *arg)
{
	struct timespec ts = { 0, 500 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	write(1, "thread\n", 7);
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread, NULL))
		return 1;
	pthread_join(t, NULL);
	write(1, "joined\n", 7);
	return 0;
}
