// SPDX-License-Identifier: GPL-2.0
/*
 * zattack: what a hostile CN does to files of its ION's export, for the
 * guest tests of the ION's defences (docs/reliability.md, "Threat
 * model").  Run on a CN, as root (squashed on the ION) or as a user,
 * against a zoidfs mount; every operation goes as far as the CN's kernel
 * lets it, so that the ION's own checks are what stands.
 *
 *   zattack read FILE buffered|direct|mmap   read the whole file
 *   zattack write FILE buffered|direct       write 4 KiB at offset 0, fsync
 *   zattack append FILE                      write a line at the end, fsync
 *   zattack list DIR                         list a directory
 *   zattack truncate FILE LENGTH             truncate(2)
 *   zattack touch FILE                       utimensat(2) with "now"
 *   zattack settime FILE SECONDS             utimensat(2) with a given time
 *   zattack link FILE NEWNAME                link(2)
 *   zattack create0 FILE                     open(O_CREAT | O_EXCL, 0), then
 *                                            write, ftruncate and fsync through
 *                                            that descriptor (the owner's
 *                                            override: must work)
 *
 * Success prints "ok" (and what was read); a failure prints
 * "zattack: CALL: message (errno)" on stdout and exits 1, as the other
 * test tools do.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 4096

static int fail(const char *what)
{
	int e = errno;

	printf("zattack: %s: %s (%d)\n", what, strerror(e), e);
	return 1;
}

static int do_read(const char *path, const char *how)
{
	int direct = !strcmp(how, "direct"), map = !strcmp(how, "mmap");
	long total = 0;
	void *buf;
	int fd;

	fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	if (fd < 0)
		return fail("open");
	if (map) {
		struct stat st;
		volatile const char *p;
		off_t i;

		if (fstat(fd, &st))
			return fail("fstat");
		if (st.st_size == 0) {
			printf("ok read 0\n");
			return 0;
		}
		p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return fail("mmap");
		/* A page the ION refuses faults with SIGBUS: the caller sees
		 * the signal's exit status. */
		for (i = 0; i < st.st_size; i++)
			total += p[i] != 0;
		printf("ok read %lld\n", (long long)st.st_size);
		return 0;
	}
	if (posix_memalign(&buf, BLOCK, BLOCK))
		return fail("posix_memalign");
	for (;;) {
		ssize_t n = read(fd, buf, BLOCK);

		if (n < 0)
			return fail("read");
		if (n == 0)
			break;
		total += n;
	}
	printf("ok read %ld\n", total);
	return 0;
}

static int do_write(const char *path, const char *how, int append)
{
	int direct = how && !strcmp(how, "direct");
	void *buf;
	int fd;

	fd = open(path, O_WRONLY | (direct ? O_DIRECT : 0) | (append ? O_APPEND : 0));
	if (fd < 0)
		return fail("open");
	if (posix_memalign(&buf, BLOCK, BLOCK))
		return fail("posix_memalign");
	memset(buf, 'A', BLOCK);
	if (append) {
		if (write(fd, "appended\n", 9) != 9)
			return fail("write");
	} else if (pwrite(fd, buf, BLOCK, 0) != BLOCK) {
		return fail("pwrite");
	}
	if (fsync(fd))
		return fail("fsync");
	if (close(fd))
		return fail("close");
	printf("ok\n");
	return 0;
}

static int do_list(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return fail("opendir");
	errno = 0;
	while ((e = readdir(d)))
		n++;
	if (errno)
		return fail("readdir");
	closedir(d);
	printf("ok entries %d\n", n);
	return 0;
}

static int do_create0(const char *path)
{
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0);

	if (fd < 0)
		return fail("open");
	if (write(fd, "hello", 5) != 5)
		return fail("write");
	if (ftruncate(fd, 3))
		return fail("ftruncate");
	if (fsync(fd))
		return fail("fsync");
	if (close(fd))
		return fail("close");
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";

	if (!strcmp(op, "read") && argc == 4)
		return do_read(argv[2], argv[3]);
	if (!strcmp(op, "write") && argc == 4)
		return do_write(argv[2], argv[3], 0);
	if (!strcmp(op, "append") && argc == 3)
		return do_write(argv[2], NULL, 1);
	if (!strcmp(op, "list") && argc == 3)
		return do_list(argv[2]);
	if (!strcmp(op, "truncate") && argc == 4) {
		if (truncate(argv[2], atoll(argv[3])))
			return fail("truncate");
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "touch") && argc == 3) {
		if (utimensat(AT_FDCWD, argv[2], NULL, 0))
			return fail("utimensat");
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "settime") && argc == 4) {
		struct timespec t[2] = { { atoll(argv[3]), 0 }, { atoll(argv[3]), 0 } };

		if (utimensat(AT_FDCWD, argv[2], t, 0))
			return fail("utimensat");
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "link") && argc == 4) {
		if (link(argv[2], argv[3]))
			return fail("link");
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "create0") && argc == 3)
		return do_create0(argv[2]);
	fprintf(stderr, "usage: zattack read|write|append|list|truncate|touch|settime|link|create0 ...\n");
	return 2;
}
