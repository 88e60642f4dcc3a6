/*
 * tests/gdbserver/rspclient.c - replays a recorded GDB remote-protocol
 * session against `gdbserver - PROGRAM` (the protocol over gdbserver's
 * stdin and stdout) and prints each packet sent and each reply, so that
 * tests/gdbserver.rs can compare the dialogue on this kernel with real
 * Linux's.
 *
 *   rspclient SESSION gdbserver - PROGRAM [ARGS]
 *
 * SESSION has one packet a line, without `$` and checksum; `#` starts a
 * comment line. A packet that gdbserver does not answer (`k`) is written
 * with a leading `!`. `G xN VALUE` (VALUE in hex) sends a `G` packet made
 * of the last `g` reply with register xN replaced, as gdb writes a register
 * to a gdbserver that has no `P`. Replies are printed run-length decoded; a
 * `g` reply is printed a register a line (arm64's order: x0..x30, sp, pc,
 * cpsr, then the FP/SIMD block as gdbserver sends it), a
 * `qXfer:auxv:read` reply an entry a line and a `qXfer:siginfo:read` reply
 * in hex. `{pid}` in a packet stands for
 * the process's id (hex) from the last stop reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static FILE *to_server;
static int from_server;
static int acks = 1;

static int get_byte(void)
{
	unsigned char c;
	ssize_t n = read(from_server, &c, 1);
	if (n != 1)
		return -1;
	return c;
}

static void send_packet(const char *body)
{
	unsigned sum = 0;
	for (const char *p = body; *p; p++)
		sum += (unsigned char)*p;
	fprintf(to_server, "$%s#%02x", body, sum & 0xff);
	fflush(to_server);
	if (acks) {
		int c = get_byte();
		if (c != '+') {
			printf("!! no ack for %s (got %d)\n", body, c);
			exit(2);
		}
	}
}

static size_t reply_len;

/*
 * Reads one packet into buf (run-length decoded, NUL-terminated; its length
 * in reply_len, as binary replies hold NULs); -1 at end of file.
 */
static int recv_packet(char *buf, size_t size)
{
	int c;
	size_t n = 0;
	unsigned sum = 0, want;
	do {
		c = get_byte();
		if (c < 0)
			return -1;
	} while (c != '$');
	for (;;) {
		c = get_byte();
		if (c < 0)
			return -1;
		if (c == '#')
			break;
		sum += c;
		if (c == '*' && n > 0) {
			int r = get_byte();
			if (r < 0)
				return -1;
			sum += r;
			for (int i = 0; i < r - 29 && n + 1 < size; i++, n++)
				buf[n] = buf[n - 1];
			continue;
		}
		if (n + 1 < size)
			buf[n++] = c;
	}
	buf[n] = 0;
	reply_len = n;
	char cs[3] = {0};
	for (int i = 0; i < 2; i++) {
		c = get_byte();
		if (c < 0)
			return -1;
		cs[i] = c;
	}
	want = strtoul(cs, NULL, 16);
	if ((sum & 0xff) != want)
		printf("!! bad checksum %s for %s\n", cs, buf);
	if (acks) {
		fputc('+', to_server);
		fflush(to_server);
	}
	return 0;
}

/* A little-endian hex string of `len` bytes as a number. */
static unsigned long long le_hex(const char *p, int len)
{
	unsigned long long v = 0;
	for (int i = len - 1; i >= 0; i--) {
		char b[3] = {p[2 * i], p[2 * i + 1], 0};
		v = (v << 8) | strtoul(b, NULL, 16);
	}
	return v;
}

static void print_registers(const char *r)
{
	size_t len = strlen(r);
	size_t off = 0;
	for (int i = 0; i < 33 && off + 16 <= len; i++, off += 16) {
		char name[8];
		if (i < 31)
			snprintf(name, sizeof name, "x%d", i);
		else
			snprintf(name, sizeof name, "%s", i == 31 ? "sp" : "pc");
		printf("<-   %s 0x%llx\n", name, le_hex(r + off, 8));
	}
	if (off + 8 <= len) {
		printf("<-   cpsr 0x%llx\n", le_hex(r + off, 4));
		off += 8;
	}
	printf("<-   rest %s\n", r + off);
}

/* A qXfer reply's binary data (after its `m`/`l`), `}`-escapes undone. */
static size_t unescape(const char *in, size_t len, unsigned char *out)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		out[n++] = in[i] == '}' && i + 1 < len ? in[++i] ^ 0x20 : in[i];
	return n;
}

static void print_auxv(const char *r, size_t len)
{
	static unsigned char raw[1 << 16];
	size_t n = unescape(r + 1, len - 1, raw);
	printf("<- %c (auxv)\n", r[0]);
	for (size_t off = 0; off + 16 <= n; off += 16) {
		unsigned long long type = 0, value = 0;
		for (int i = 7; i >= 0; i--) {
			type = type << 8 | raw[off + i];
			value = value << 8 | raw[off + 8 + i];
		}
		printf("<-   %llu 0x%llx\n", type, value);
	}
}

/* A binary qXfer reply (siginfo_t) as hex bytes, 16 a line. */
static void print_hex(const char *r, size_t len)
{
	static unsigned char raw[1 << 16];
	size_t n = unescape(r + 1, len - 1, raw);
	printf("<- %c (%zu bytes)\n", r[0], n);
	for (size_t off = 0; off < n; off += 16) {
		printf("<-  ");
		for (size_t i = off; i < n && i < off + 16; i++)
			printf(" %02x", raw[i]);
		printf("\n");
	}
}

/* The process id (hex) in a stop reply's `thread:pPID.TID`. */
static void note_pid(const char *r, char *pid, size_t size)
{
	const char *t = strstr(r, "thread:p");
	if (!t)
		return;
	t += strlen("thread:p");
	size_t n = strcspn(t, ".;");
	if (n < size) {
		memcpy(pid, t, n);
		pid[n] = 0;
	}
}

int main(int argc, char **argv)
{
	int up[2], down[2];
	static char pid_hex[32], expanded[4096 + 64], line[4096], reply[1 << 16], regs[1 << 16], packet[(1 << 16) + 1];
	if (argc < 3) {
		fprintf(stderr, "usage: rspclient SESSION GDBSERVER ARGS...\n");
		return 2;
	}
	FILE *session = fopen(argv[1], "r");
	if (!session) {
		perror(argv[1]);
		return 2;
	}
	if (pipe(up) || pipe(down)) {
		perror("pipe");
		return 2;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(down[0], 0);
		dup2(up[1], 1);
		close(down[0]);
		close(down[1]);
		close(up[0]);
		close(up[1]);
		execv(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	to_server = fdopen(down[1], "w");
	from_server = up[0];
	while (fgets(line, sizeof line, session)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		char *at = strstr(line, "{pid}");
		if (at) {
			*at = 0;
			snprintf(expanded, sizeof expanded, "%s%s%s", line, pid_hex, at + 5);
			snprintf(line, sizeof line, "%.4095s", expanded);
		}
		int no_reply = line[0] == '!';
		const char *body = line + no_reply;
		unsigned reg;
		unsigned long long value;
		if (sscanf(line, "G x%u %llx", &reg, &value) == 2) {
			if (reg > 30 || strlen(regs) < 16 * (reg + 1)) {
				printf("!! %s: no such register in the last g reply\n", line);
				return 2;
			}
			snprintf(packet, sizeof packet, "G%s", regs);
			for (int i = 0; i < 8; i++, value >>= 8) {
				char b[3];
				snprintf(b, sizeof b, "%02llx", value & 0xff);
				memcpy(packet + 1 + 16 * reg + 2 * i, b, 2);
			}
			printf("-> %s\n", line);
			body = packet;
		} else {
			printf("-> %s\n", body);
		}
		fflush(stdout);
		send_packet(body);
		if (no_reply)
			continue;
		if (recv_packet(reply, sizeof reply) < 0) {
			printf("!! gdbserver closed the connection\n");
			break;
		}
		if (!strcmp(body, "g") && reply[0] != 'E') {
			snprintf(regs, sizeof regs, "%s", reply);
			printf("<- (registers)\n");
			print_registers(reply);
		} else if (!strncmp(body, "qXfer:auxv:read:", 16) && reply_len > 0 &&
			   (reply[0] == 'm' || reply[0] == 'l')) {
			print_auxv(reply, reply_len);
		} else if (!strncmp(body, "qXfer:siginfo:read:", 19) && reply_len > 0 &&
			   (reply[0] == 'm' || reply[0] == 'l')) {
			print_hex(reply, reply_len);
		} else {
			printf("<- %s\n", reply);
		}
		note_pid(reply, pid_hex, sizeof pid_hex);
		fflush(stdout);
		if (!strcmp(body, "QStartNoAckMode") && !strcmp(reply, "OK"))
			acks = 0;
	}
	fclose(to_server);
	int status;
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 2;
	}
	if (WIFEXITED(status))
		printf("gdbserver exited with %d\n", WEXITSTATUS(status));
	else
		printf("gdbserver killed by signal %d\n", WTERMSIG(status));
	return 0;
}
