// SPDX-License-Identifier: GPL-2.0
/*
 * zoidunix: runs the same POSIX file calls locally and through the ION's
 * `unix` plug-in (/dev/zoid), and compares results, errno values and data.
 *
 *   zoidunix compare LOCALDIR REMOTEDIR   LOCALDIR: an empty local directory;
 *                                         REMOTEDIR: the same name in the export
 *   zoidunix escape                       attempts to leave the export
 *   zoidunix cat PATH                     print a file of the export
 *   zoidunix creds PATH                   create PATH; print its uid and gid
 *   zoidunix hold PATH SECONDS            open PATH, print "fd N", sleep, then
 *                                         read it: the descriptor stays this
 *                                         process's
 *   zoidunix foreign FIRST LAST           read descriptors FIRST..LAST, which
 *                                         this process never opened: each must
 *                                         fail with EBADF (another process's,
 *                                         on this CN or another, are not ours)
 *   zoidunix race PATH EXPECT SECONDS     for SECONDS, open and read PATH (a
 *                                         walk through `..` that the ION's
 *                                         renames race) again and again: it
 *                                         must read EXPECT or fail, never
 *                                         anything else (a file outside the
 *                                         export); prints the counts
 *
 * Prints one line per check; exits 1 on the first mismatch.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "zoid.h"

static int zfd;
static uint8_t abuf[1 << 16], rbuf[(1 << 16) + 256];

/* One remote call: args in *a; returns ret (>= 0) or -errno; reply in *r. */
static int64_t rcall(uint16_t fn, struct zbuf *a, struct zbuf *r)
{
	int err;

	*r = (struct zbuf){ rbuf, 0, sizeof(rbuf), 0 };
	if (a->err)
		return -a->err;
	err = zoid_call(zfd, UNIX_ID, fn, a, r);
	if (err)
		return err;
	return (int64_t)zget_u64(r);
}

#define ARGS struct zbuf a = { abuf, 0, sizeof(abuf), 0 }, r

static void zput_str(struct zbuf *b, const char *s) { zput_bytes(b, s, (uint32_t)strlen(s)); }

static int64_t r_open(const char *p, int flags, int mode)
{
	ARGS;
	zput_str(&a, p); zput_u32(&a, zoid_oflags(flags)); zput_u32(&a, (uint32_t)mode);
	return rcall(UNIX_OPEN, &a, &r);
}

static int64_t r_openat(int dirfd, const char *p, int flags, int mode)
{
	ARGS;
	zput_u32(&a, (uint32_t)dirfd); zput_str(&a, p);
	zput_u32(&a, zoid_oflags(flags)); zput_u32(&a, (uint32_t)mode);
	return rcall(UNIX_OPENAT, &a, &r);
}

static int64_t r_fd(uint16_t fn, int fd)
{
	ARGS;
	zput_u32(&a, (uint32_t)fd);
	return rcall(fn, &a, &r);
}

static int64_t r_path(uint16_t fn, const char *p)
{
	ARGS;
	zput_str(&a, p);
	return rcall(fn, &a, &r);
}

static int64_t r_path2(uint16_t fn, const char *p, const char *q)
{
	ARGS;
	zput_str(&a, p); zput_str(&a, q);
	return rcall(fn, &a, &r);
}

static int64_t r_mkdir(const char *p, int mode)
{
	ARGS;
	zput_str(&a, p); zput_u32(&a, (uint32_t)mode);
	return rcall(UNIX_MKDIR, &a, &r);
}

static int64_t r_write(int fd, const void *buf, size_t n, int64_t off)
{
	ARGS;
	zput_u32(&a, (uint32_t)fd); zput_bytes(&a, buf, (uint32_t)n);
	if (off >= 0)
		zput_u64(&a, (uint64_t)off);
	return rcall(off >= 0 ? UNIX_PWRITE : UNIX_WRITE, &a, &r);
}

/* read/pread/readlink/getdents: the out array is copied to buf. */
static int64_t r_readish(uint16_t fn, int fd, const char *path, void *buf, size_t n, int64_t off)
{
	ARGS;
	int64_t ret;
	uint32_t len;
	const uint8_t *p;

	if (path)
		zput_str(&a, path);
	else
		zput_u32(&a, (uint32_t)fd);
	zput_u32(&a, (uint32_t)n);
	if (off >= 0)
		zput_u64(&a, (uint64_t)off);
	ret = rcall(fn, &a, &r);
	if (ret < 0)
		return ret;
	len = zget_u32(&r);
	p = zget(&r, len);
	if (r.err || len > n)
		return -EBADMSG;
	memcpy(buf, p, len);
	return ret;
}

/*
 * readv/writev as a CN's stub does them (the unix plug-in's doc): the
 * iovecs gathered into one buffer for writev, readv's bytes scattered
 * over them; one call, so one read or write at the file position.
 */
static int64_t r_writev(int fd, const struct iovec *iov, int n)
{
	static uint8_t flat[1 << 15];
	size_t len = 0;
	ARGS;

	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len > sizeof(flat) - len)
			return -EINVAL;
		memcpy(flat + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	zput_u32(&a, (uint32_t)fd); zput_bytes(&a, flat, (uint32_t)len);
	return rcall(UNIX_WRITEV, &a, &r);
}

static int64_t r_readv(int fd, const struct iovec *iov, int n)
{
	static uint8_t flat[1 << 15];
	size_t len = 0, done = 0;
	int64_t ret;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (len > sizeof(flat))
		return -EINVAL;
	ret = r_readish(UNIX_READV, fd, NULL, flat, len, -1);
	for (int i = 0; ret > 0 && i < n && done < (size_t)ret; i++) {
		size_t k = iov[i].iov_len < (size_t)ret - done ? iov[i].iov_len : (size_t)ret - done;

		memcpy(iov[i].iov_base, flat + done, k);
		done += k;
	}
	return ret;
}

static int64_t r_lseek(int fd, int64_t off, int whence)
{
	ARGS;
	zput_u32(&a, (uint32_t)fd); zput_u64(&a, (uint64_t)off); zput_u32(&a, (uint32_t)whence);
	return rcall(UNIX_LSEEK, &a, &r);
}

static int64_t r_ftruncate(int fd, int64_t len)
{
	ARGS;
	zput_u32(&a, (uint32_t)fd); zput_u64(&a, (uint64_t)len);
	return rcall(UNIX_FTRUNCATE, &a, &r);
}

struct rstat { uint32_t mode, nlink, uid, gid; int64_t size; };

/* fstat (path NULL) or stat/lstat. */
static int64_t r_stat(uint16_t fn, int fd, const char *path, struct rstat *st)
{
	ARGS;
	int64_t ret;

	if (path)
		zput_str(&a, path);
	else
		zput_u32(&a, (uint32_t)fd);
	ret = rcall(fn, &a, &r);
	if (ret < 0)
		return ret;
	zget(&r, 16);				/* dev, ino */
	st->mode = zget_u32(&r);
	st->nlink = zget_u32(&r);
	st->uid = zget_u32(&r);
	st->gid = zget_u32(&r);
	zget(&r, 8);				/* rdev */
	st->size = (int64_t)zget_u64(&r);
	return r.err ? -EBADMSG : ret;
}

static int failures;

static int64_t local(int64_t r)
{
	return r < 0 ? -errno : r;
}

#define CHECK(what, lv, rv) do { \
	int64_t l_ = (lv), r_ = (rv); \
	if (l_ != r_) { \
		printf("MISMATCH %s: local %lld remote %lld\n", what, (long long)l_, (long long)r_); \
		failures++; \
	} else { \
		printf("ok %s = %lld\n", what, (long long)l_); \
	} \
} while (0)

static char lp[512], rp[512], lp2[512], rp2[512];
#define L(x) (snprintf(lp, sizeof(lp), "%s/%s", ldir, x), lp)
#define R(x) (snprintf(rp, sizeof(rp), "%s/%s", rdir, x), rp)
/* Second path of a call (rename). */
#define L2(x) (snprintf(lp2, sizeof(lp2), "%s/%s", ldir, x), lp2)
#define R2(x) (snprintf(rp2, sizeof(rp2), "%s/%s", rdir, x), rp2)

/* Sorted names of a directory, local and remote, compared. */
static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void compare_dir(const char *ldir, const char *rdir, const char *sub)
{
	char *ln[64], *rn[64], buf[4096];
	int nl = 0, nr = 0, fd;
	int64_t n;
	DIR *d = opendir(L(sub));
	struct dirent *e;

	while (d && (e = readdir(d)) && nl < 64)
		ln[nl++] = strdup(e->d_name);
	if (d)
		closedir(d);
	fd = (int)r_open(R(sub), O_RDONLY | O_DIRECTORY, 0);
	while (fd >= 0 && (n = r_readish(UNIX_GETDENTS, fd, NULL, buf, sizeof(buf), -1)) > 0) {
		for (int64_t o = 0; o + 19 <= n && nr < 64;) {
			uint16_t len = (uint16_t)((uint8_t)buf[o + 17] << 8 | (uint8_t)buf[o + 18]);

			rn[nr] = strndup(buf + o + 19, len);
			nr++;
			o += 19 + len;
		}
	}
	if (fd >= 0)
		r_fd(UNIX_CLOSE, fd);
	qsort(ln, nl, sizeof(char *), cmp_names);
	qsort(rn, nr, sizeof(char *), cmp_names);
	CHECK("getdents entries", nl, nr);
	for (int i = 0; i < nl && i < nr; i++)
		if (strcmp(ln[i], rn[i])) {
			printf("MISMATCH getdents name %s vs %s\n", ln[i], rn[i]);
			failures++;
		}
}

static int compare(const char *ldir, const char *rdir)
{
	char data[8192], lb[8192], rb[8192];
	struct stat ls;
	struct rstat rs;
	int lfd, rfd, ldfd, rdfd;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 13 + 1);
	CHECK("mkdir d", local(mkdir(L("d"), 0755)), r_mkdir(R("d"), 0755));
	CHECK("mkdir d again", local(mkdir(L("d"), 0755)), r_mkdir(R("d"), 0755));
	lfd = (int)local(open(L("d/f"), O_CREAT | O_EXCL | O_RDWR, 0644));
	rfd = (int)r_open(R("d/f"), O_CREAT | O_EXCL | O_RDWR, 0644);
	CHECK("open O_CREAT|O_EXCL ok", lfd >= 0, rfd >= 0);
	CHECK("open O_EXCL again", local(open(L("d/f"), O_CREAT | O_EXCL | O_RDWR, 0644)),
	      r_open(R("d/f"), O_CREAT | O_EXCL | O_RDWR, 0644));
	CHECK("write", local(write(lfd, data, 5000)), r_write(rfd, data, 5000, -1));
	CHECK("pwrite", local(pwrite(lfd, data, 100, 10000)), r_write(rfd, data, 100, 10000));
	CHECK("lseek SEEK_END", local(lseek(lfd, 0, SEEK_END)), r_lseek(rfd, 0, SEEK_END));
	CHECK("lseek SEEK_SET", local(lseek(lfd, 4000, SEEK_SET)), r_lseek(rfd, 4000, SEEK_SET));
	CHECK("read", local(read(lfd, lb, 3000)), r_readish(UNIX_READ, rfd, NULL, rb, 3000, -1));
	CHECK("read data", memcmp(lb, rb, 3000), 0);
	CHECK("pread hole", local(pread(lfd, lb, 200, 9950)), r_readish(UNIX_PREAD, rfd, NULL, rb, 200, 9950));
	CHECK("pread data", memcmp(lb, rb, 150), 0);
	CHECK("pread at EOF", local(pread(lfd, lb, 10, 20000)), r_readish(UNIX_PREAD, rfd, NULL, rb, 10, 20000));
	{
		/* Vectored, with an empty iovec between; readv over a hole. */
		const struct iovec wv[3] = { { data + 7, 100 }, { data, 0 }, { data + 300, 2000 } };
		static char l1[50], l2[3000], r1[50], r2[3000];
		const struct iovec lv[2] = { { l1, sizeof(l1) }, { l2, sizeof(l2) } };
		const struct iovec rv[2] = { { r1, sizeof(r1) }, { r2, sizeof(r2) } };

		CHECK("lseek for writev", local(lseek(lfd, 7000, SEEK_SET)), r_lseek(rfd, 7000, SEEK_SET));
		CHECK("writev", local(writev(lfd, wv, 3)), r_writev(rfd, wv, 3));
		CHECK("lseek after writev", local(lseek(lfd, 0, SEEK_CUR)), r_lseek(rfd, 0, SEEK_CUR));
		CHECK("lseek for readv", local(lseek(lfd, 6990, SEEK_SET)), r_lseek(rfd, 6990, SEEK_SET));
		CHECK("readv", local(readv(lfd, lv, 2)), r_readv(rfd, rv, 2));
		CHECK("readv data", memcmp(l1, r1, sizeof(l1)) || memcmp(l2, r2, sizeof(l2)), 0);
		CHECK("readv short at the end", local(readv(lfd, lv, 2)), r_readv(rfd, rv, 2));
		CHECK("readv short data", memcmp(l1, r1, sizeof(l1)) || memcmp(l2, r2, 10), 0);
		CHECK("readv at EOF", local(readv(lfd, lv, 2)), r_readv(rfd, rv, 2));
	}
	CHECK("fstat", local(fstat(lfd, &ls)), r_stat(UNIX_FSTAT, rfd, NULL, &rs));
	CHECK("fstat size", ls.st_size, rs.size);
	CHECK("fstat mode", ls.st_mode, rs.mode);
	CHECK("fstat nlink", ls.st_nlink, rs.nlink);
	CHECK("ftruncate", local(ftruncate(lfd, 6000)), r_ftruncate(rfd, 6000));
	CHECK("fsync", local(fsync(lfd)), r_fd(UNIX_FSYNC, rfd));
	CHECK("stat size", (stat(L("d/f"), &ls), ls.st_size), (r_stat(UNIX_STAT, 0, R("d/f"), &rs), rs.size));
	CHECK("close", local(close(lfd)), r_fd(UNIX_CLOSE, rfd));
	CHECK("close again", local(close(lfd)), r_fd(UNIX_CLOSE, rfd));
	CHECK("read closed fd", local(read(lfd, lb, 1)), r_readish(UNIX_READ, rfd, NULL, rb, 1, -1));
	{
		const struct iovec v = { lb, 1 }, rv = { rb, 1 };

		CHECK("writev closed fd", local(writev(lfd, &v, 1)), r_writev(rfd, &v, 1));
		CHECK("readv closed fd", local(readv(lfd, &v, 1)), r_readv(rfd, &rv, 1));
	}
	CHECK("open missing", local(open(L("d/nope"), O_RDONLY)), r_open(R("d/nope"), O_RDONLY, 0));
	CHECK("symlink", local(symlink("f", L("d/l"))), r_path2(UNIX_SYMLINK, "f", R("d/l")));
	memset(lb, 0, sizeof(lb));
	memset(rb, 0, sizeof(rb));
	CHECK("readlink", local(readlink(L("d/l"), lb, 100)), r_readish(UNIX_READLINK, 0, R("d/l"), rb, 100, -1));
	CHECK("readlink data", strcmp(lb, rb), 0);
	CHECK("lstat mode", (lstat(L("d/l"), &ls), ls.st_mode & S_IFMT), (r_stat(UNIX_LSTAT, 0, R("d/l"), &rs), rs.mode & S_IFMT));
	CHECK("stat through link", (stat(L("d/l"), &ls), ls.st_size), (r_stat(UNIX_STAT, 0, R("d/l"), &rs), rs.size));
	CHECK("readlink not a link", local(readlink(L("d/f"), lb, 100)), r_readish(UNIX_READLINK, 0, R("d/f"), rb, 100, -1));
	CHECK("rename", local(rename(L("d/f"), L2("d/g"))), r_path2(UNIX_RENAME, R("d/f"), R2("d/g")));
	CHECK("rename missing", local(rename(L("d/f"), L2("d/h"))), r_path2(UNIX_RENAME, R("d/f"), R2("d/h")));
	CHECK("mkdir d/sub", local(mkdir(L("d/sub"), 0700)), r_mkdir(R("d/sub"), 0700));
	/* openat relative to a directory descriptor. */
	ldfd = (int)local(open(L("d"), O_RDONLY | O_DIRECTORY));
	rdfd = (int)r_open(R("d"), O_RDONLY | O_DIRECTORY, 0);
	CHECK("open d O_DIRECTORY ok", ldfd >= 0, rdfd >= 0);
	lfd = (int)local(openat(ldfd, "g", O_RDONLY));
	rfd = (int)r_openat(rdfd, "g", O_RDONLY, 0);
	CHECK("openat d, g ok", lfd >= 0, rfd >= 0);
	CHECK("read through openat", local(read(lfd, lb, 100)), r_readish(UNIX_READ, rfd, NULL, rb, 100, -1));
	CHECK("read through openat data", memcmp(lb, rb, 100), 0);
	CHECK("openat file, x (not a dir)", local(openat(lfd, "x", O_RDONLY)), r_openat(rfd, "x", O_RDONLY, 0));
	CHECK("close openat fd", local(close(lfd)), r_fd(UNIX_CLOSE, rfd));
	CHECK("openat d, missing", local(openat(ldfd, "nope", O_RDONLY)), r_openat(rdfd, "nope", O_RDONLY, 0));
	lfd = (int)local(openat(ldfd, "sub/new", O_CREAT | O_EXCL | O_WRONLY, 0600));
	rfd = (int)r_openat(rdfd, "sub/new", O_CREAT | O_EXCL | O_WRONLY, 0600);
	CHECK("openat d, sub/new O_CREAT ok", lfd >= 0, rfd >= 0);
	CHECK("close sub/new", local(close(lfd)), r_fd(UNIX_CLOSE, rfd));
	CHECK("stat sub/new mode", (stat(L("d/sub/new"), &ls), ls.st_mode), (r_stat(UNIX_STAT, 0, R("d/sub/new"), &rs), rs.mode));
	CHECK("unlink sub/new", local(unlink(L("d/sub/new"))), r_path(UNIX_UNLINK, R("d/sub/new")));
	CHECK("openat bad dirfd", local(openat(999, "g", O_RDONLY)), r_openat(999, "g", O_RDONLY, 0));
	CHECK("close d", local(close(ldfd)), r_fd(UNIX_CLOSE, rdfd));
	compare_dir(ldir, rdir, "d");
	CHECK("rmdir not empty", local(rmdir(L("d"))), r_path(UNIX_RMDIR, R("d")));
	CHECK("unlink dir", local(unlink(L("d/sub"))), r_path(UNIX_UNLINK, R("d/sub")));
	CHECK("rmdir d/sub", local(rmdir(L("d/sub"))), r_path(UNIX_RMDIR, R("d/sub")));
	CHECK("unlink l", local(unlink(L("d/l"))), r_path(UNIX_UNLINK, R("d/l")));
	CHECK("unlink g", local(unlink(L("d/g"))), r_path(UNIX_UNLINK, R("d/g")));
	CHECK("unlink missing", local(unlink(L("d/g"))), r_path(UNIX_UNLINK, R("d/g")));
	CHECK("rmdir d", local(rmdir(L("d"))), r_path(UNIX_RMDIR, R("d")));
	printf("%d mismatches\n", failures);
	return failures ? 1 : 0;
}

/* Attempts to leave the export: all must fail or stay inside. */
static int escape(void)
{
	struct rstat rs;
	char dir[40], up[48];
	int64_t r;
	int bad = 0, dfd;

	r = r_open("../etc/passwd", O_RDONLY, 0);
	printf("open ../etc/passwd: %lld\n", (long long)r);
	bad |= r != -EACCES;
	r = r_open("a/../../etc/passwd", O_RDONLY, 0);
	printf("open a/../../etc/passwd: %lld\n", (long long)r);
	bad |= r != -EACCES;
	/* Absolute paths and symlinks resolve inside the export. */
	r = r_stat(UNIX_STAT, 0, "/etc/passwd", &rs);
	printf("stat /etc/passwd: %lld\n", (long long)r);
	bad |= r != -ENOENT;
	r_path2(UNIX_SYMLINK, "/etc/passwd", "escape-link");
	r = r_open("escape-link", O_RDONLY, 0);
	printf("open escape-link -> /etc/passwd: %lld\n", (long long)r);
	bad |= r != -ENOENT;
	r_path2(UNIX_SYMLINK, "../../../../etc/passwd", "escape-rel");
	r = r_stat(UNIX_STAT, 0, "escape-rel", &rs);
	printf("stat escape-rel -> ../../../../etc/passwd: %lld\n", (long long)r);
	bad |= r != -ENOENT;
	/*
	 * Below a directory descriptor: never above that directory.  The
	 * directory is this process's own: every CN runs this at once, and
	 * with one shared name one CN's rmdir could come between another's
	 * mkdir and open (its descriptor then failed with EBADF).
	 */
	snprintf(dir, sizeof(dir), "escape-dir-%ld", (long)getpid());
	snprintf(up, sizeof(up), "%s/up", dir);
	r_mkdir(dir, 0755);
	r_path2(UNIX_SYMLINK, "../../../../etc/passwd", up);
	dfd = (int)r_open(dir, O_RDONLY | O_DIRECTORY, 0);
	r = r_openat(dfd, "../hello", O_RDONLY, 0);
	printf("openat dir, ../hello: %lld\n", (long long)r);
	bad |= r != -EACCES;
	r = r_openat(dfd, "up", O_RDONLY, 0);
	printf("openat dir, up -> ../../../../etc/passwd: %lld\n", (long long)r);
	bad |= r != -ENOENT;
	r_fd(UNIX_CLOSE, dfd);
	r_path(UNIX_UNLINK, up);
	r_path(UNIX_RMDIR, dir);
	r_path(UNIX_UNLINK, "escape-link");
	r_path(UNIX_UNLINK, "escape-rel");
	printf("escape %s\n", bad ? "FAILED" : "refused");
	return bad;
}

/* r_open for the command-line modes: the descriptor, or < 0 once said. */
static int open_or_say(const char *path, int flags, int mode)
{
	int fd = (int)r_open(path, flags, mode);

	if (fd < 0)
		printf("open: %d\n", fd);
	return fd;
}

/* `race`: see the usage above. */
static int race(const char *path, const char *expect, int seconds)
{
	time_t end = time(NULL) + seconds;
	long ok = 0, failed = 0, enoent = 0, escaped = 0, last_err = 0;
	size_t want = strlen(expect);
	char buf[256];

	while (time(NULL) < end) {
		int64_t fd = r_open(path, O_RDONLY, 0), n;

		if (fd < 0) {
			failed++;
			if (fd == -ENOENT)
				enoent++;
			else
				last_err = (long)-fd;
			continue;
		}
		n = r_readish(UNIX_READ, (int)fd, NULL, buf, sizeof(buf) - 1, -1);
		r_fd(UNIX_CLOSE, (int)fd);
		if (n < 0) {
			failed++;
			last_err = (long)-n;
		} else if ((size_t)n == want && !memcmp(buf, expect, want)) {
			ok++;
		} else {
			buf[n] = 0;
			printf("escaped: read \"%s\"\n", buf);
			escaped++;
		}
	}
	printf("race: %ld read inside, %ld failed (%ld ENOENT, the rest last with errno %ld), "
	       "%ld escaped\n", ok, failed, enoent, last_err, escaped);
	return escaped != 0 || ok == 0;
}

int main(int argc, char **argv)
{
	zfd = open("/dev/zoid", O_RDWR);
	if (zfd < 0) {
		perror("/dev/zoid");
		return 2;
	}
	if (argc == 4 && !strcmp(argv[1], "compare"))
		return compare(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "symlink")) {
		printf("symlink: %lld\n", (long long)r_path2(UNIX_SYMLINK, argv[2], argv[3]));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "escape"))
		return escape();
	if (argc == 5 && !strcmp(argv[1], "race"))
		return race(argv[2], argv[3], atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "cat")) {
		char buf[4096];
		int fd = open_or_say(argv[2], O_RDONLY, 0);
		int64_t n;

		if (fd < 0)
			return 1;
		while ((n = r_readish(UNIX_READ, fd, NULL, buf, sizeof(buf), -1)) > 0)
			fwrite(buf, 1, (size_t)n, stdout);
		return n < 0;
	}
	if (argc == 3 && !strcmp(argv[1], "creds")) {
		struct rstat rs;
		int fd = open_or_say(argv[2], O_CREAT | O_WRONLY, 0644);
		int64_t r;

		if (fd < 0)
			return 1;
		r = r_stat(UNIX_FSTAT, fd, NULL, &rs);
		r_fd(UNIX_CLOSE, fd);
		printf("uid %u gid %u (%lld)\n", rs.uid, rs.gid, (long long)r);
		return r < 0;
	}
	if (argc == 4 && !strcmp(argv[1], "hold")) {
		char buf[256];
		int fd = open_or_say(argv[2], O_RDONLY, 0);
		int64_t n;

		if (fd < 0)
			return 1;
		printf("fd %d\n", fd);
		fflush(stdout);
		sleep((unsigned)atoi(argv[3]));
		n = r_readish(UNIX_READ, fd, NULL, buf, sizeof(buf), -1);
		printf("read %lld\n", (long long)n);
		r_fd(UNIX_CLOSE, fd);
		return n < 0;
	}
	if (argc == 4 && !strcmp(argv[1], "foreign")) {
		int bad = 0;

		for (int fd = atoi(argv[2]); fd <= atoi(argv[3]); fd++) {
			char buf[64];
			int64_t n = r_readish(UNIX_READ, fd, NULL, buf, sizeof(buf), -1);

			if (n != -EBADF) {
				printf("fd %d: %lld, not EBADF\n", fd, (long long)n);
				bad = 1;
			}
		}
		printf("foreign descriptors %s\n", bad ? "USABLE" : "refused");
		return bad;
	}
	fprintf(stderr, "usage: zoidunix compare LOCALDIR REMOTEDIR | escape | cat PATH | creds PATH"
		" | hold PATH SECONDS | foreign FIRST LAST\n");
	return 2;
}
