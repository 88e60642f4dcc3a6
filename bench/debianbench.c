/*
 * bench/debianbench.c - the figures bench/debian.py compares: each
 * operation repeated until at least MIN_NS have passed, then reported as
 * "bench: NAME NS ns" (nanoseconds per operation, CLOCK_MONOTONIC).
 * Built dynamically against glibc by aarch64-linux-gnu-gcc, so
 * clock_gettime goes through glibc's vDSO path as any Debian program's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIN_NS 300000000LL /* 0.3 s per figure */

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Runs op in batches of `batch` until MIN_NS passed; prints ns per op. */
static void measure(const char *name, void (*op)(void), long batch)
{
	long long start = now(), t;
	long n = 0;
	op(); /* warm up: page faults, the file cache, the dynamic linker */
	start = now();
	do {
		for (long i = 0; i < batch; i++)
			op();
		n += batch;
		t = now() - start;
	} while (t < MIN_NS);
	printf("bench: %s %.1f ns\n", name, (double)t / n);
	fflush(stdout);
}

static void op_clock_gettime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	__asm__ volatile("" : : "r"(&ts) : "memory");
}

static void op_getpid(void)
{
	pid_t p = getpid();
	__asm__ volatile("" : : "r"(p));
}

static int data_fd;
static char buf[4096];

static void op_read_4k(void)
{
	if (pread(data_fd, buf, sizeof buf, 0) != sizeof buf) {
		perror("pread");
		exit(1);
	}
}

static void op_mmap_1m(void)
{
	size_t len = 1 << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	munmap(p, len);
}

static void spawn(char *const argv[])
{
	int status;
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s failed (status %#x)\n", argv[0], status);
		exit(1);
	}
}

static void op_fork_exec_true(void)
{
	char *argv[] = { "/usr/bin/true", NULL };
	spawn(argv);
}

static void op_bash_c_true(void)
{
	char *argv[] = { "/usr/bin/bash", "-c", "true", NULL };
	spawn(argv);
}

int main(void)
{
	data_fd = open("/tmp/debianbench.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (data_fd < 0) {
		perror("/tmp/debianbench.dat");
		return 1;
	}
	memset(buf, 'x', sizeof buf);
	if (write(data_fd, buf, sizeof buf) != sizeof buf) {
		perror("write");
		return 1;
	}
	measure("clock_gettime", op_clock_gettime, 10000);
	measure("getpid", op_getpid, 10000);
	measure("read_4k", op_read_4k, 1000);
	measure("mmap_touch_1m", op_mmap_1m, 10);
	measure("fork_exec_true", op_fork_exec_true, 1);
	measure("bash_c_true", op_bash_c_true, 1);
	return 0;
}
