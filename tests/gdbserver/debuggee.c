/*
 * tests/gdbserver/debuggee.c - the program tests/gdbserver.rs debugs with
 * Debian's gdbserver: a function called three times (software breakpoint,
 * register write), one called once (hardware breakpoint) that stores to a
 * watched variable (hardware watchpoint), and an exit status that shows
 * what the debugger wrote (also printed, for a run the debugger detached
 * from). Static and non-PIE, so that its addresses are
 * the same on every kernel.
 */
#include <stdio.h>

volatile long counter;
volatile long watched;

__attribute__((noinline)) long add(long a, long b)
{
	return a + b;
}

__attribute__((noinline)) void poke(void)
{
	watched = 42;
}

int main(void)
{
	long s = 0;
	for (long i = 0; i < 3; i++)
		s = add(s, i);
	counter = s;
	poke();
	int status = (int)((counter + watched) & 0xff);
	/* To gdbserver's stderr, which its inferior shares. */
	dprintf(2, "debuggee exits with %d\n", status);
	return status;
}
