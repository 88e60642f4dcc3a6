/*
 * bench/readbench.c - the per-call cost of read, pread, write, lseek and
 * fstat on a tmpfs file and /dev/null: for each, the best of 40 batches of
 * 500 calls (robust to a loaded host, unlike a median over a fixed time),
 * printed as "bench: NAME NS ns". Build it, then run it on both kernels:
 *   aarch64-linux-gnu-gcc -O2 -static -o target/bench/readbench bench/readbench.c
 *   scripts/qemu-run.sh --smp 4 --cpu cortex-a72 target/bench/readbench -- readbench
 *   ../shared/reflinux/run.sh --smp 4 target/bench/readbench -- readbench
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static char buf[4096] __attribute__((aligned(4096)));

/* Runs EXPR once to warm up, then 40 batches of 500; prints the best. */
#define MEASURE(name, expr)                                                \
	do {                                                               \
		double best = 1e18;                                        \
		(void)(expr);                                              \
		for (int b = 0; b < 40; b++) {                             \
			long long s = now();                               \
			for (int i = 0; i < 500; i++)                      \
				(void)(expr);                              \
			double t = (double)(now() - s) / 500;              \
			if (t < best)                                      \
				best = t;                                  \
		}                                                          \
		printf("bench: %s %.1f ns\n", name, best);                 \
	} while (0)

int main(void)
{
	struct stat st;
	int fd = open("/tmp/readbench.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	int nul = open("/dev/null", O_RDWR);
	if (fd < 0 || nul < 0) {
		perror("open");
		return 1;
	}
	memset(buf, 'x', sizeof buf);
	if (write(fd, buf, sizeof buf) != sizeof buf) {
		perror("write");
		return 1;
	}
	MEASURE("getpid", syscall(SYS_getpid));
	MEASURE("lseek", lseek(fd, 0, SEEK_CUR));
	MEASURE("fstat", fstat(fd, &st));
	MEASURE("pread0", pread(fd, buf, 0, 0));
	MEASURE("pread1", pread(fd, buf, 1, 0));
	MEASURE("pread4k", pread(fd, buf, 4096, 0));
	MEASURE("read_null", read(nul, buf, 4096));
	MEASURE("write_null1", write(nul, buf, 1));
	MEASURE("write_null4k", write(nul, buf, 4096));
	MEASURE("pwrite4k", pwrite(fd, buf, 4096, 0));
	return 0;
}
