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
 *   zxattr setacl FILE access|default SPEC
 *                                  set a POSIX ACL: SPEC is setfacl's short
 *                                  form, "u::rw-,u:1002:r--,g::---,m::r--,o::---"
 *                                  (any order; perms from r, w, x and -)
 *   zxattr getacl FILE access|default
 *                                  print it in that form, in the kernel's order
 *   zxattr rmacl FILE access|default
 *
 * ACLs travel as system.posix_acl_* in the kernel's xattr form (a version 2
 * header, then 8-byte entries: tag, perms, id; little-endian everywhere).
 *
 * Symlinks are not followed (the l* calls).  A failure prints
 * "zxattr: CALL: message (errno)" on stdout and exits 1.
 */
#include <errno.h>
#include <stdint.h>
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

/* ACL entry tags, as <linux/posix_acl.h>, in the order the kernel wants. */
static const struct {
	char c;
	uint16_t tag;
	int has_id;
} acl_tags[] = {
	{ 'u', 0x01, 0 }, { 'u', 0x02, 1 }, { 'g', 0x04, 0 }, { 'g', 0x08, 1 },
	{ 'm', 0x10, 0 }, { 'o', 0x20, 0 },
};

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static const char *acl_name(const char *kind)
{
	if (!strcmp(kind, "access"))
		return "system.posix_acl_access";
	if (!strcmp(kind, "default"))
		return "system.posix_acl_default";
	return NULL;
}

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = v >> (8 * i);
}

static uint32_t get_le(const unsigned char *p, int bytes)
{
	uint32_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static int acl_cmp(const void *a, const void *b)
{
	const struct acl_entry *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* SPEC into buf in the xattr form; its length, or -1 if SPEC is bad. */
static long acl_encode(const char *spec)
{
	static struct acl_entry e[1024];
	char copy[8192], *save, *tok;
	long n = 0;

	if (strlen(spec) >= sizeof(copy))
		return -1;
	strcpy(copy, spec);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *id = strchr(tok, ':'), *perm = id ? strchr(id + 1, ':') : NULL;
		int t, named;

		if (!id || !perm || id != tok + 1 || n == 1024 || strlen(perm + 1) != 3)
			return -1;
		named = perm > id + 1;
		for (t = 0; t < 6; t++)
			if (acl_tags[t].c == *tok && acl_tags[t].has_id == named)
				break;
		if (t == 6)
			return -1;
		e[n].tag = acl_tags[t].tag;
		e[n].id = named ? strtoul(id + 1, NULL, 10) : 0xffffffff;
		e[n].perm = 0;
		for (int i = 0; i < 3; i++) {
			if (perm[1 + i] == "rwx"[i])
				e[n].perm |= 4 >> i;
			else if (perm[1 + i] != '-')
				return -1;
		}
		n++;
	}
	qsort(e, n, sizeof(e[0]), acl_cmp);
	put_le((unsigned char *)buf, 2, 4);
	for (long i = 0; i < n; i++) {
		unsigned char *p = (unsigned char *)buf + 4 + 8 * i;

		put_le(p, e[i].tag, 2);
		put_le(p + 2, e[i].perm, 2);
		put_le(p + 4, e[i].id, 4);
	}
	return 4 + 8 * n;
}

/* Prints the ACL of buf's first n bytes in SPEC form; -1 if malformed. */
static int acl_print(long n)
{
	const unsigned char *p = (const unsigned char *)buf;

	if (n < 4 || (n - 4) % 8 || get_le(p, 4) != 2)
		return -1;
	for (long i = 4; i < n; i += 8) {
		uint16_t tag = get_le(p + i, 2), perm = get_le(p + i + 2, 2);
		int t;

		for (t = 0; t < 6 && acl_tags[t].tag != tag; t++)
			;
		if (t == 6)
			return -1;
		printf("%s%c:", i > 4 ? "," : "", acl_tags[t].c);
		if (acl_tags[t].has_id)
			printf("%u", get_le(p + i + 4, 4));
		printf(":%c%c%c", perm & 4 ? 'r' : '-', perm & 2 ? 'w' : '-', perm & 1 ? 'x' : '-');
	}
	putchar('\n');
	return 0;
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
	if (!strcmp(cmd, "setacl") && argc >= 5 && acl_name(argv[3])) {
		long len = acl_encode(argv[4]);

		if (len < 0) {
			fprintf(stderr, "zxattr: bad ACL %s\n", argv[4]);
			return 2;
		}
		if (setxattr(file, acl_name(argv[3]), buf, len, 0))
			return fail("setxattr");
		return 0;
	}
	if (!strcmp(cmd, "getacl") && argc >= 4 && acl_name(argv[3])) {
		n = getxattr(file, acl_name(argv[3]), buf, sizeof(buf));
		if (n < 0)
			return fail("getxattr");
		if (acl_print(n)) {
			printf("zxattr: malformed ACL of %zd bytes\n", n);
			return 1;
		}
		return 0;
	}
	if (!strcmp(cmd, "rmacl") && argc >= 4 && acl_name(argv[3])) {
		if (removexattr(file, acl_name(argv[3])))
			return fail("removexattr");
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of zxattr.c\n");
	return 2;
}
