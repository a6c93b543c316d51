// SPDX-License-Identifier: GPL-2.0
/*
 * zxattr: extended attributes from the shell, for the guest tests (busybox
 * has setfattr but no getfattr, and neither shows an errno).
 *
 *   zxattr get FILE NAME [SIZE]    print the value (a SIZE-byte buffer,
 *                                  default 65536; 0 prints the length)
 *   zxattr set FILE NAME VALUE [create|replace]
 *   zxattr list FILE [SIZE]        print the names, one a line (SIZE 0
 *                                  prints the list's length)
 *   zxattr remove FILE NAME
 *
 * Symlinks are not followed (the l* calls).  A failure prints
 * "zxattr: CALL: message (errno)" on stdout and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static char buf[65536];

static int fail(const char *what)
{
	int e = errno;

	printf("zxattr: %s: %s (%d)\n", what, strerror(e), e);
	return 1;
}

static size_t size_arg(int argc, char **argv, int i)
{
	return argc > i ? strtoul(argv[i], NULL, 0) : sizeof(buf);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";
	const char *file = argc > 2 ? argv[2] : "";
	ssize_t n;

	if (!strcmp(cmd, "get") && argc >= 4) {
		size_t size = size_arg(argc, argv, 4);

		if (size > sizeof(buf))
			size = sizeof(buf);
		n = lgetxattr(file, argv[3], size ? buf : NULL, size);
		if (n < 0)
			return fail("getxattr");
		if (size)
			fwrite(buf, 1, n, stdout), putchar('\n');
		else
			printf("%zd\n", n);
		return 0;
	}
	if (!strcmp(cmd, "set") && argc >= 5) {
		int flags = 0;

		if (argc > 5 && !strcmp(argv[5], "create"))
			flags = XATTR_CREATE;
		else if (argc > 5 && !strcmp(argv[5], "replace"))
			flags = XATTR_REPLACE;
		if (lsetxattr(file, argv[3], argv[4], strlen(argv[4]), flags))
			return fail("setxattr");
		return 0;
	}
	if (!strcmp(cmd, "list")) {
		size_t size = size_arg(argc, argv, 3);

		if (size > sizeof(buf))
			size = sizeof(buf);
		n = llistxattr(file, size ? buf : NULL, size);
		if (n < 0)
			return fail("listxattr");
		if (!size) {
			printf("%zd\n", n);
			return 0;
		}
		for (ssize_t i = 0; i < n; i += strlen(buf + i) + 1)
			printf("%s\n", buf + i);
		return 0;
	}
	if (!strcmp(cmd, "remove") && argc >= 4) {
		if (lremovexattr(file, argv[3]))
			return fail("removexattr");
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of zxattr.c\n");
	return 2;
}
