/*
 * tests/debian/straced.c - what tests/debian.rs runs under Debian's
 * `strace -f`: a fork whose child writes a line and exits 0, a write by
 * the parent, an open of a missing file, exit status 3. Static, so that
 * strace's output holds no dynamic linker's system calls.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int status;
	pid_t pid = fork();
	if (pid == 0) {
		write(1, "child\n", 6);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	write(1, "parent\n", 7);
	if (open("/nonexistent/file", O_RDONLY) >= 0)
		return 1;
	return 3;
}
