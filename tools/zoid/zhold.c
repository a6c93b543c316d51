// SPDX-License-Identifier: GPL-2.0
/*
 * zhold: holds a file open across an event, for the guest tests of what
 * fsync and close report afterwards.  A shell cannot: every command it
 * runs inherits its descriptors, and the first of them to exit closes one
 * and takes the error that was the shell's to see (a write-back error is
 * reported once per open file).
 *
 *   zhold FILE DATA GO
 *
 * Opens FILE for writing (created, truncated), writes DATA's bytes to it,
 * prints "written N", then waits until the file GO exists (polled every
 * 100 ms), fsyncs and closes FILE and prints "fsync: ok" or
 * "fsync: message (errno)", then "close: ok" or "close: message (errno)".
 * Exits 0 once it printed both, 1 if the open, the write or reading DATA
 * failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what)
{
	printf("zhold: %s: %s (%d)\n", what, strerror(errno), errno);
	return 1;
}

static void report(const char *what, int r)
{
	if (r)
		printf("%s: %s (%d)\n", what, strerror(errno), errno);
	else
		printf("%s: ok\n", what);
}

int main(int argc, char **argv)
{
	char buf[65536];
	long total = 0;
	ssize_t n;
	int fd, in;

	if (argc != 4) {
		fprintf(stderr, "usage: zhold FILE DATA GO\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail("open");
	in = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail("open data");
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, n) != n)
			return fail("write");
		total += n;
	}
	if (n < 0)
		return fail("read data");
	close(in);
	printf("written %ld\n", total);
	while (access(argv[3], F_OK))
		usleep(100000);
	report("fsync", fsync(fd));
	report("close", close(fd));
	return 0;
}
