// SPDX-License-Identifier: GPL-2.0
/*
 * zfsx: fsx-style random I/O with verification, for zoidfs tests.
 *
 *   zfsx FILE OPS SEED [MAXSIZE]
 *   zfsx -d DIR
 *   zfsx -m DIR PREFIX N
 *
 * Runs OPS random operations on FILE (created or truncated first): write,
 * read, truncate (shrink, grow, sparse), mmap read, mmap write (shared,
 * msync), fsync, close-and-reopen, and O_DIRECT-free pread/pwrite at odd
 * offsets.  A copy in memory says what every byte must be; every read and
 * a final full read are checked against it.  The same SEED gives the same
 * operations.  Prints "zfsx: OPS ops ok, size N" or the first mismatch
 * and exits 1.
 *
 * With -d, lists DIR's names (no "." or "..", no stat calls) one per line,
 * then goes back with seekdir() to the position telldir() gave halfway
 * and checks that the rest comes again in the same order (stable readdir
 * cookies); exits 1 if not.  With -m, makes N names PREFIX1 .. PREFIXN in
 * DIR: the first an empty file, the others hard links to it (no inode,
 * open or process per name: a debug kernel under emulation makes 100k
 * names in a fraction of the time files took).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *path;
static int fd = -1;
static unsigned char *model, *buf;
static size_t size, maxsize;
static uint64_t rng;
static long op_no;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t below(size_t n)
{
	return n ? next() % n : 0;
}

static void die(const char *what)
{
	fprintf(stderr, "zfsx: op %ld: %s: %s\n", op_no, what, strerror(errno));
	exit(1);
}

static void check(const unsigned char *got, size_t off, size_t len, const char *how)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (got[i] != model[off + i]) {
			fprintf(stderr,
				"zfsx: op %ld: %s mismatch at %zu (of %zu at %zu): got %02x want %02x\n",
				op_no, how, off + i, len, off, got[i], model[off + i]);
			exit(1);
		}
	}
}

static void fill(unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(next() | 1);	/* never 0: holes show */
}

static void do_open(void)
{
	fd = open(path, O_RDWR);
	if (fd < 0)
		die("open");
}

static void op_write(void)
{
	size_t off = below(maxsize), len = 1 + below(maxsize - off);

	if (len > 65536 + 3)
		len = 1 + below(65536 + 3);
	fill(buf, len);
	if (pwrite(fd, buf, len, off) != (ssize_t)len)
		die("pwrite");
	memcpy(model + off, buf, len);
	if (off + len > size)
		size = off + len;
}

static void op_read(void)
{
	size_t off = below(size + 1), len = below(size - off + 100);
	ssize_t n, want;

	if (len > 131072)
		len = 131072;
	n = pread(fd, buf, len, off);
	if (n < 0)
		die("pread");
	want = off + len > size ? (ssize_t)(size - off) : (ssize_t)len;
	if (n != want) {
		fprintf(stderr, "zfsx: op %ld: pread %zu at %zu: %zd bytes, want %zd\n",
			op_no, len, off, n, want);
		exit(1);
	}
	check(buf, off, n, "read");
}

static void op_truncate(void)
{
	size_t to = below(maxsize + 1);

	if (ftruncate(fd, to))
		die("ftruncate");
	/* What lies past the end reads back as zeroes once the file grows. */
	if (to < size)
		memset(model + to, 0, size - to);
	size = to;
}

static void op_mmap(int write)
{
	size_t page = sysconf(_SC_PAGESIZE), off, len, map_off, map_len;
	unsigned char *m;

	if (!size)
		return;
	off = below(size);
	len = 1 + below(size - off);
	map_off = off & ~(page - 1);
	map_len = off + len - map_off;
	m = mmap(NULL, map_len, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd,
		 map_off);
	if (m == MAP_FAILED)
		die(write ? "mmap (write)" : "mmap (read)");
	if (write) {
		fill(m + (off - map_off), len);
		memcpy(model + off, m + (off - map_off), len);
		if (msync(m, map_len, MS_SYNC))
			die("msync");
	} else {
		check(m + (off - map_off), off, len, "mmap read");
	}
	munmap(m, map_len);
}

static void op_reopen(void)
{
	if (close(fd))
		die("close");
	do_open();
}

static int list_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	long *after = NULL;	/* telldir() after each name */
	size_t n = 0, cap = 0, i, half;

	if (!d)
		die("opendir");
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			names = realloc(names, cap * sizeof(*names));
			after = realloc(after, cap * sizeof(*after));
			if (!names || !after)
				die("realloc");
		}
		names[n] = strdup(e->d_name);
		if (!names[n])
			die("strdup");
		after[n] = telldir(d);
		puts(names[n++]);
	}
	if (errno)
		die("readdir");
	if (n < 2)
		return 0;
	/* Back to just after the middle name: the rest again, in order. */
	half = n / 2;
	seekdir(d, after[half]);
	for (i = half + 1; i < n; i++) {
		do
			e = readdir(d);
		while (e && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")));
		if (!e || strcmp(e->d_name, names[i])) {
			fprintf(stderr, "zfsx: after seekdir: entry %zu is %s, was %s\n", i,
				e ? e->d_name : "(end)", names[i]);
			return 1;
		}
	}
	if (readdir(d)) {
		fprintf(stderr, "zfsx: after seekdir: more entries than before\n");
		return 1;
	}
	closedir(d);
	return 0;
}

static int make_files(const char *dir, const char *prefix, long n)
{
	char first[4096], name[4096];
	long i;
	int f;

	snprintf(first, sizeof(first), "%s/%s1", dir, prefix);
	f = open(first, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (f < 0 || close(f))
		die(first);
	for (i = 2; i <= n; i++) {
		snprintf(name, sizeof(name), "%s/%s%ld", dir, prefix, i);
		if (link(first, name))
			die(name);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long ops, i;
	int use_mmap_write = 1;
	struct stat st;

	if (argc == 3 && !strcmp(argv[1], "-d"))
		return list_dir(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "-m"))
		return make_files(argv[2], argv[3], atol(argv[4]));
	if (argc < 4) {
		fprintf(stderr, "usage: zfsx FILE OPS SEED [MAXSIZE] | zfsx -d DIR | zfsx -m DIR PREFIX N\n");
		return 2;
	}
	path = argv[1];
	ops = atol(argv[2]);
	rng = strtoull(argv[3], NULL, 0) * 0x9e3779b97f4a7c15ULL + 1;
	maxsize = argc > 4 ? strtoul(argv[4], NULL, 0) : 262144;
	if (getenv("ZFSX_NO_MMAP_WRITE"))
		use_mmap_write = 0;
	model = calloc(1, maxsize + 1);
	buf = malloc(maxsize + 131072 + 100);
	if (!model || !buf)
		die("malloc");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create");
	for (i = 0; i < ops; i++) {
		op_no = i;
		switch (below(12)) {
		case 0: case 1: case 2: case 3:
			op_write();
			break;
		case 4: case 5: case 6:
			op_read();
			break;
		case 7:
			op_truncate();
			break;
		case 8:
			op_mmap(0);
			break;
		case 9:
			if (use_mmap_write)
				op_mmap(1);
			else
				op_write();
			break;
		case 10:
			if (fsync(fd))
				die("fsync");
			break;
		default:
			op_reopen();
			break;
		}
	}
	op_no = ops;
	if (fstat(fd, &st))
		die("fstat");
	if ((size_t)st.st_size != size) {
		fprintf(stderr, "zfsx: final size %lld, want %zu\n", (long long)st.st_size, size);
		return 1;
	}
	if (pread(fd, buf, size, 0) != (ssize_t)size)
		die("final pread");
	check(buf, 0, size, "final read");
	if (close(fd))
		die("final close");
	printf("zfsx: %ld ops ok, size %zu\n", ops, size);
	return 0;
}
