// SPDX-License-Identifier: GPL-2.0
/*
 * fsbench: the file system workloads of `make bench`, one static program so
 * every file system (zoidfs, NFS, v9fs) runs exactly the same loops.
 *
 *   fsbench write FILE BLOCK TOTAL     sequential write, then fsync + close
 *   fsbench read FILE BLOCK            sequential read of the whole file
 *   fsbench randread FILE BLOCK OPS    random BLOCK-aligned preads (QD 1)
 *   fsbench randwrite FILE BLOCK OPS   random BLOCK-aligned pwrites (QD 1)
 *   fsbench meta DIR FILES DIRS        create, stat and unlink FILES empty
 *                                      files spread over DIRS directories
 *   fsbench openclose FILE OPS         open(O_RDONLY) and close FILE OPS
 *                                      times (a path without data)
 *   fsbench par write|read DIR PROCS BLOCK TOTAL
 *                                      PROCS processes at once, each on its
 *                                      own file DIR/par-<i> (write: TOTAL
 *                                      bytes, then fsync; read: the whole
 *                                      file, TOTAL unused)
 *   fsbench mount SOURCE DIR TYPE DATA mount(2) with DATA as the options
 *                                      string (busybox's mount would run its
 *                                      own NFSv3 mount protocol for nfs4)
 *
 * Every command prints one result line per phase, which the benchmark
 * scripts parse:
 *   ok op=<op> bytes=<bytes> ns=<elapsed>
 *   ok op=<op> ops=<n> ns=<elapsed> p50_ns=<median> p99_ns=<99th percentile>
 *   ok op=par_<op> procs=<n> bytes=<all> ns=<wall> jain_ppm=<fairness>
 * and exits 1 (with the failing call on stderr) if anything fails: a
 * benchmark never reports a number for work that did not happen.  Written
 * data is a counter pattern that read checks at a few places per block
 * (cheap, and a wrong answer is not a fast one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "fsbench: %s %s: %s\n", what, arg ? arg : "",
		errno ? strerror(errno) : "failed");
	exit(1);
}

static uint64_t number(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v == 0) {
		errno = EINVAL;
		die("bad number", s);
	}
	return v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The pattern: every 8-byte word holds its file offset. */
static void fill(unsigned char *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = off + i;

		memcpy(buf + i, &v, 8);
	}
}

static int check(const unsigned char *buf, size_t len, uint64_t off)
{
	size_t at[3] = { 0, len / 2, len - 8 };

	for (int k = 0; k < 3; k++) {
		size_t i = at[k] & ~(size_t)7;
		uint64_t v;

		if (i + 8 > len)
			continue;
		memcpy(&v, buf + i, 8);
		if (v != off + i)
			return 0;
	}
	return 1;
}

static void *block_buffer(size_t block)
{
	void *buf;

	if (posix_memalign(&buf, 4096, block))
		die("out of memory for a block of", "");
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_latencies(const char *op, uint64_t *lat, uint64_t n, uint64_t ns)
{
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("ok op=%s ops=%llu ns=%llu p50_ns=%llu p99_ns=%llu\n", op,
	       (unsigned long long)n, (unsigned long long)ns,
	       (unsigned long long)lat[n / 2],
	       (unsigned long long)lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1]);
}

static int seq_write(const char *file, size_t block, uint64_t total)
{
	unsigned char *buf = block_buffer(block);
	uint64_t t0, off;
	int fd;

	t0 = now_ns();
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", file);
	for (off = 0; off < total; off += block) {
		size_t len = total - off < block ? total - off : block;

		fill(buf, len, off);
		if (write(fd, buf, len) != (ssize_t)len)
			die("write", file);
	}
	if (fsync(fd) || close(fd))
		die("fsync/close", file);
	printf("ok op=write bytes=%llu ns=%llu\n", (unsigned long long)total,
	       (unsigned long long)(now_ns() - t0));
	return 0;
}

static int seq_read(const char *file, size_t block)
{
	unsigned char *buf = block_buffer(block);
	uint64_t t0, off = 0;
	ssize_t got;
	int fd;

	t0 = now_ns();
	fd = open(file, O_RDONLY);
	if (fd < 0)
		die("open", file);
	while ((got = read(fd, buf, block)) > 0) {
		if (!check(buf, (size_t)got, off)) {
			errno = EIO;
			die("wrong data read from", file);
		}
		off += (uint64_t)got;
	}
	if (got < 0 || close(fd))
		die("read", file);
	printf("ok op=read bytes=%llu ns=%llu\n", (unsigned long long)off,
	       (unsigned long long)(now_ns() - t0));
	return 0;
}

static int random_io(const char *file, size_t block, uint64_t ops, int writing)
{
	unsigned char *buf = block_buffer(block);
	uint64_t *lat = calloc(ops, sizeof(*lat));
	uint64_t t0, blocks;
	struct stat st;
	int fd;

	if (!lat)
		die("out of memory for latencies", "");
	fd = open(file, writing ? O_RDWR : O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die("open", file);
	blocks = (uint64_t)st.st_size / block;
	if (!blocks) {
		errno = EINVAL;
		die("file smaller than a block:", file);
	}
	t0 = now_ns();
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t off = (next_random() % blocks) * block, t = now_ns();

		if (writing) {
			fill(buf, block, off);
			if (pwrite(fd, buf, block, (off_t)off) != (ssize_t)block)
				die("pwrite", file);
		} else {
			if (pread(fd, buf, block, (off_t)off) != (ssize_t)block)
				die("pread", file);
			if (!check(buf, block, off)) {
				errno = EIO;
				die("wrong data read from", file);
			}
		}
		lat[i] = now_ns() - t;
	}
	if (writing && fsync(fd))
		die("fsync", file);
	if (close(fd))
		die("close", file);
	print_latencies(writing ? "randwrite" : "randread", lat, ops, now_ns() - t0);
	return 0;
}

/* Name of file i of the metadata run: DIR/d<i % dirs>/f<i>. */
static void meta_name(char *name, size_t size, const char *dir, uint64_t i, uint64_t dirs)
{
	snprintf(name, size, "%s/d%llu/f%llu", dir, (unsigned long long)(i % dirs),
		 (unsigned long long)i);
}

static int create_one(const char *name)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);

	return fd < 0 || close(fd);
}

static int stat_one(const char *name)
{
	struct stat st;

	return stat(name, &st) || !S_ISREG(st.st_mode);
}

static int unlink_one(const char *name)
{
	return unlink(name);
}

/* One metadata phase: op_one on every file, timed one by one. */
static void meta_phase(const char *op, int (*op_one)(const char *name), uint64_t *lat,
		       const char *dir, uint64_t files, uint64_t dirs)
{
	char name[4096];
	uint64_t t0 = now_ns();

	for (uint64_t i = 0; i < files; i++) {
		uint64_t t = now_ns();

		meta_name(name, sizeof(name), dir, i, dirs);
		if (op_one(name))
			die(op, name);
		lat[i] = now_ns() - t;
	}
	print_latencies(op, lat, files, now_ns() - t0);
}

static int meta(const char *dir, uint64_t files, uint64_t dirs)
{
	uint64_t *lat = calloc(files, sizeof(*lat));
	char name[4096];

	if (!lat)
		die("out of memory for latencies", "");
	for (uint64_t d = 0; d < dirs; d++) {
		snprintf(name, sizeof(name), "%s/d%llu", dir, (unsigned long long)d);
		if (mkdir(name, 0755) && errno != EEXIST)
			die("mkdir", name);
	}
	meta_phase("create", create_one, lat, dir, files, dirs);
	meta_phase("stat", stat_one, lat, dir, files, dirs);
	meta_phase("unlink", unlink_one, lat, dir, files, dirs);
	for (uint64_t d = 0; d < dirs; d++) {
		snprintf(name, sizeof(name), "%s/d%llu", dir, (unsigned long long)d);
		if (rmdir(name))
			die("rmdir", name);
	}
	return 0;
}

/* OPS opens and closes of one file, timed one by one. */
static int open_close(const char *file, uint64_t ops)
{
	uint64_t *lat = calloc(ops, sizeof(*lat));
	uint64_t t0 = now_ns();

	if (!lat)
		die("out of memory for latencies", "");
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t t = now_ns();
		int fd = open(file, O_RDONLY);

		if (fd < 0 || close(fd))
			die("open/close", file);
		lat[i] = now_ns() - t;
	}
	print_latencies("openclose", lat, ops, now_ns() - t0);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fsbench write FILE BLOCK TOTAL | read FILE BLOCK |\n"
		"       randread FILE BLOCK OPS | randwrite FILE BLOCK OPS |\n"
		"       meta DIR FILES DIRS | openclose FILE OPS |\n"
		"       par write|read DIR PROCS BLOCK TOTAL | mount SOURCE DIR TYPE DATA\n");
	exit(2);
}

/*
 * `par`: the aggregate rate is all the bytes over the wall time from the
 * first start to the last end; fairness is Jain's index over the
 * processes' own rates ((sum r)^2 / (n sum r^2): 1 when all are equal,
 * 1/n when one process gets everything), in millionths.
 */
static int parallel(const char *op, const char *dir, uint64_t procs, size_t block,
		    uint64_t total)
{
	static char lines[65536];
	uint64_t t0, wall, sum_bytes = 0, i;
	double sum_r = 0, sum_r2 = 0;
	size_t used = 0;
	char file[4096];
	ssize_t got;
	int fds[2], status, writing = !strcmp(op, "write");

	if ((!writing && strcmp(op, "read")) || procs > 64) {
		errno = EINVAL;
		die("par: write or read, at most 64 processes, not", op);
	}
	if (pipe(fds))
		die("pipe", "");
	t0 = now_ns();
	for (i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork", "");
		if (pid == 0) {
			/* The child's result line goes to the parent (one short write). */
			close(fds[0]);
			if (dup2(fds[1], 1) < 0)
				die("dup2", "");
			snprintf(file, sizeof(file), "%s/par-%llu", dir, (unsigned long long)i);
			if (writing)
				seq_write(file, block, total);
			else
				seq_read(file, block);
			fflush(stdout);
			_exit(0);
		}
	}
	close(fds[1]);
	while (used < sizeof(lines) - 1 &&
	       (got = read(fds[0], lines + used, sizeof(lines) - 1 - used)) > 0)
		used += (size_t)got;
	lines[used] = 0;
	for (i = 0; i < procs; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			errno = EIO;
			die("par: a process failed", op);
		}
	wall = now_ns() - t0;
	for (char *l = strtok(lines, "\n"); l; l = strtok(NULL, "\n")) {
		unsigned long long bytes, ns;

		if (sscanf(l, "ok op=%*s bytes=%llu ns=%llu", &bytes, &ns) != 2 || !ns)
			continue;
		sum_bytes += bytes;
		sum_r += (double)bytes / ns;
		sum_r2 += ((double)bytes / ns) * ((double)bytes / ns);
	}
	if (!sum_r2) {
		errno = EIO;
		die("par: no results from", op);
	}
	printf("ok op=par_%s procs=%llu bytes=%llu ns=%llu jain_ppm=%llu\n", op,
	       (unsigned long long)procs, (unsigned long long)sum_bytes,
	       (unsigned long long)wall,
	       (unsigned long long)(1e6 * sum_r * sum_r / (procs * sum_r2) + 0.5));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "write"))
		return seq_write(argv[2], number(argv[3]), number(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "read"))
		return seq_read(argv[2], number(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "randread"))
		return random_io(argv[2], number(argv[3]), number(argv[4]), 0);
	if (argc == 5 && !strcmp(argv[1], "randwrite"))
		return random_io(argv[2], number(argv[3]), number(argv[4]), 1);
	if (argc == 5 && !strcmp(argv[1], "meta"))
		return meta(argv[2], number(argv[3]), number(argv[4]));
	if (argc == 7 && !strcmp(argv[1], "par"))
		return parallel(argv[2], argv[3], number(argv[4]), number(argv[5]),
				number(argv[6]));
	if (argc == 4 && !strcmp(argv[1], "openclose"))
		return open_close(argv[2], number(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "mount")) {
		if (mount(argv[2], argv[3], argv[4], 0, argv[5]))
			die("mount", argv[3]);
		return 0;
	}
	usage();
	return 2;
}
