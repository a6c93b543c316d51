// SPDX-License-Identifier: GPL-2.0
/*
 * posixcheck: a POSIX conformance suite for a mounted file system, in the
 * spirit of pjdfstest: one line per check, TAP-like, so that the same run
 * on a local tmpfs, on zoidfs and on NFS or v9fs can be compared check by
 * check (`make conformance`, qemu/guest/tests/89-zoidfs-posix.sh).
 *
 *   posixcheck DIR        run every check in a new directory DIR/pc-<pid>
 *                         (removed afterwards) and print
 *                           ok <check>
 *                           not ok <check>: <what happened, what was expected>
 *                         then "posixcheck: N checks, P passed, F failed".
 *
 * Run it as root: it works as two unprivileged users, A (uid 1000, gid
 * 1000, also in group 1002) and B (uid 1001, gid 1001), each in a child
 * process, so that permission checks mean the same whether the server
 * squashes root or not; root itself only makes DIR/pc-<pid> (mode 0777).
 * Expected values are what Linux's local file systems (tmpfs, ext4)
 * return.  Exit status: 0 when the suite ran (whatever failed), 2 when it
 * could not (bad DIR, not root).
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define UID_A 1000
#define GID_A 1000
#define GID_A2 1002
#define UID_B 1001
#define GID_B 1001

/*
 * A past time that no operation under test sets by itself: just after the
 * epoch, as guests without a clock (ppc32's bamboo) start there.
 */
#define PAST_SEC 0L
#define PAST_NSEC 123456789L

static void line(int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void line(int ok, const char *name, const char *fmt, ...)
{
	char buf[640];
	int n = snprintf(buf, sizeof(buf) - 2, "%s %s", ok ? "ok" : "not ok", name);

	if (!ok && fmt && n < (int)sizeof(buf) - 2) {
		va_list ap;

		n += snprintf(buf + n, sizeof(buf) - 2 - n, ": ");
		va_start(ap, fmt);
		if (n < (int)sizeof(buf) - 2)
			n += vsnprintf(buf + n, sizeof(buf) - 2 - n, fmt, ap);
		va_end(ap);
	}
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(1, buf, n) != n)
		_exit(3);
}

static const char *ename(int e)
{
	const char *s = e ? strerrorname_np(e) : "success";

	return s ? s : "?";
}

/* expect_ok: the call returned >= 0. */
static void expect_ok(const char *name, long r, const char *call)
{
	if (r >= 0)
		line(1, name, NULL);
	else
		line(0, name, "%s failed with %s", call, ename(errno));
}

/* expect_err: the call failed with errno `want`. */
static void expect_err(const char *name, long r, int want, const char *call)
{
	if (r == -1 && errno == want)
		line(1, name, NULL);
	else if (r == -1)
		line(0, name, "%s failed with %s, expected %s", call, ename(errno), ename(want));
	else
		line(0, name, "%s succeeded, expected %s", call, ename(want));
}

#define OK(name, call) expect_ok(name, (long)(call), #call)
#define ERR(name, call, e) expect_err(name, (long)(call), e, #call)
#define TRUE(name, cond, ...) line(!!(cond), name, __VA_ARGS__)

/* The checks' own helpers: a setup step that fails makes its check fail. */
static int mkfile(const char *path, mode_t mode, const char *data)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
	ssize_t len = data ? (ssize_t)strlen(data) : 0;

	if (fd < 0)
		return -1;
	if (len && write(fd, data, len) != len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* slurp: reads up to cap-1 bytes of a file into buf (a C string); -1 on error. */
static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return got;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? (mode_t)-1 : st.st_mode & 07777;
}

static long long size_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? -1 : (long long)st.st_size;
}

static long nlink_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? -1 : (long)st.st_nlink;
}

static int set_past(const char *path)
{
	struct timespec ts[2] = { { PAST_SEC, PAST_NSEC }, { PAST_SEC, PAST_NSEC } };

	return utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

/* mtime_moved: the file's mtime is no longer the past one set_past() set. */
static int mtime_moved(const char *path)
{
	struct stat st;

	return !lstat(path, &st) &&
	       (st.st_mtim.tv_sec != PAST_SEC || st.st_mtim.tv_nsec != PAST_NSEC);
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int ctime_after(const char *path, const struct timespec *before)
{
	struct stat st;

	if (lstat(path, &st))
		return 0;
	return st.st_ctim.tv_sec > before->tv_sec ||
	       (st.st_ctim.tv_sec == before->tv_sec && st.st_ctim.tv_nsec > before->tv_nsec);
}

static struct timespec ctime_of(const char *path)
{
	struct stat st;
	struct timespec none = { 0, 0 };

	return lstat(path, &st) ? none : st.st_ctim;
}

static int entries(const char *dir, const char *prefix, int *dots)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	*dots = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			(*dots)++;
		else if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	}
	closedir(d);
	return n;
}

/* ---- user A: open and create ------------------------------------------------ */

static void open_checks(void)
{
	char name[300];
	int fd;

	umask(022);
	fd = open("c1", O_CREAT | O_EXCL | O_WRONLY, 0666);
	OK("open.creat_excl_new", fd);
	if (fd >= 0)
		close(fd);
	TRUE("open.creat_mode_umask", mode_of("c1") == 0644, "mode %o, expected 644",
	     mode_of("c1"));
	ERR("open.creat_excl_existing", open("c1", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	symlink("nowhere", "dangling");
	ERR("open.creat_excl_dangling_symlink",
	    open("dangling", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	ERR("open.missing", open("nosuch", O_RDONLY), ENOENT);
	ERR("open.creat_in_missing_dir", open("nosuch/f", O_CREAT | O_WRONLY, 0644), ENOENT);
	ERR("open.through_a_file", open("c1/f", O_RDONLY), ENOTDIR);
	mkdir("d1", 0755);
	ERR("open.dir_for_writing", open("d1", O_WRONLY), EISDIR);
	ERR("open.directory_flag_on_file", open("c1", O_RDONLY | O_DIRECTORY), ENOTDIR);
	symlink("c1", "s1");
	ERR("open.nofollow_symlink", open("s1", O_RDONLY | O_NOFOLLOW), ELOOP);
	memset(name, 'n', 255);
	name[255] = 0;
	fd = open(name, O_CREAT | O_WRONLY, 0644);
	OK("open.name_255_bytes", fd);
	if (fd >= 0) {
		close(fd);
		unlink(name);
	}
	name[255] = 'n';
	name[256] = 0;
	ERR("open.name_256_bytes", open(name, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);

	mkfile("t1", 0644, "some bytes");
	fd = open("t1", O_CREAT | O_WRONLY, 0644);
	TRUE("open.creat_keeps_existing_data", fd >= 0 && size_of("t1") == 10, "size %lld",
	     size_of("t1"));
	if (fd >= 0)
		close(fd);
	set_past("t1");
	fd = open("t1", O_WRONLY | O_TRUNC);
	TRUE("open.trunc_empties", fd >= 0 && size_of("t1") == 0, "size %lld", size_of("t1"));
	TRUE("open.trunc_sets_mtime", mtime_moved("t1"), "mtime still in the past");
	if (fd >= 0)
		close(fd);

	/* Made with mode 0: the creating open may write, a later open may not. */
	fd = open("m0", O_CREAT | O_EXCL | O_WRONLY, 0);
	TRUE("open.creat_mode_0_writable", fd >= 0 && write(fd, "x", 1) == 1, "open or write: %s",
	     ename(errno));
	if (fd >= 0)
		close(fd);
	ERR("open.mode_0_reopen", open("m0", O_RDONLY), EACCES);

	fd = open("c1", O_RDONLY);
	ERR("open.write_on_rdonly_fd", fd < 0 ? 0 : write(fd, "x", 1), EBADF);
	if (fd >= 0)
		close(fd);
	fd = open("c1", O_WRONLY);
	{
		char c;

		ERR("open.read_on_wronly_fd", fd < 0 ? 0 : read(fd, &c, 1), EBADF);
	}
	if (fd >= 0)
		close(fd);

	umask(027);
	fd = open("u1", O_CREAT | O_WRONLY, 0666);
	if (fd >= 0)
		close(fd);
	TRUE("open.umask_027", mode_of("u1") == 0640, "mode %o, expected 640", mode_of("u1"));
	mkdir("ud", 0777);
	TRUE("mkdir.umask_027", mode_of("ud") == 0750, "mode %o, expected 750", mode_of("ud"));
	umask(022);
}

/* ---- user A: reads, writes, sizes ------------------------------------------- */

static void rw_checks(void)
{
	static char big[1 << 20], back[1 << 20];
	char buf[64];
	struct stat st;
	off_t off;
	int fd, i, same;

	fd = open("w1", O_CREAT | O_RDWR | O_TRUNC, 0644);
	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 4096);
	TRUE("write.1mib", fd >= 0 && write(fd, big, sizeof(big)) == (ssize_t)sizeof(big),
	     "write: %s", ename(errno));
	TRUE("write.offset_after", fd >= 0 && lseek(fd, 0, SEEK_CUR) == (off_t)sizeof(big),
	     "offset %lld", fd >= 0 ? (long long)lseek(fd, 0, SEEK_CUR) : -1LL);
	same = fd >= 0 && pread(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back) &&
	       !memcmp(big, back, sizeof(big));
	TRUE("read.1mib_back", same, "bytes differ");
	TRUE("read.at_eof_is_0", fd >= 0 && read(fd, buf, sizeof(buf)) == 0, "not 0");
	TRUE("write.0_bytes", fd >= 0 && write(fd, buf, 0) == 0, "not 0");
	TRUE("pread.keeps_offset", fd >= 0 && lseek(fd, 0, SEEK_CUR) == (off_t)sizeof(big),
	     "offset moved");
	ERR("lseek.negative", fd < 0 ? 0 : lseek(fd, -1, SEEK_SET), EINVAL);
	off = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	TRUE("lseek.end", off == (off_t)sizeof(big), "at %lld", (long long)off);
	off = fd < 0 ? -1 : lseek(fd, 0, SEEK_HOLE);
	TRUE("lseek.hole_of_dense_file_is_eof", off == (off_t)sizeof(big), "at %lld",
	     (long long)off);
	TRUE("fsync.ok", fd >= 0 && fsync(fd) == 0, "%s", ename(errno));
	TRUE("fdatasync.ok", fd >= 0 && fdatasync(fd) == 0, "%s", ename(errno));
	if (fd >= 0)
		close(fd);

	/* Holes read as zeros; a write past the end extends the file. */
	fd = open("h1", O_CREAT | O_RDWR | O_TRUNC, 0644);
	TRUE("pwrite.past_eof", fd >= 0 && pwrite(fd, "tail", 4, 1 << 20) == 4, "%s",
	     ename(errno));
	TRUE("pwrite.past_eof_size", size_of("h1") == (1 << 20) + 4, "size %lld", size_of("h1"));
	memset(buf, 1, sizeof(buf));
	same = fd >= 0 && pread(fd, buf, sizeof(buf), 4096) == (ssize_t)sizeof(buf);
	for (i = 0; same && i < (int)sizeof(buf); i++)
		same = buf[i] == 0;
	TRUE("read.hole_is_zeros", same, "not zeros");
	TRUE("stat.sparse_blocks", fd >= 0 && !fstat(fd, &st) && st.st_blocks < 1024,
	     "%lld blocks of 512 for 4 bytes written", (long long)st.st_blocks);
	if (fd >= 0)
		close(fd);

	/* Larger than 4 GiB (also on 32-bit machines: _FILE_OFFSET_BITS below). */
	fd = open("big5g", O_CREAT | O_RDWR | O_TRUNC, 0644);
	TRUE("pwrite.beyond_4gib", fd >= 0 && pwrite(fd, "z", 1, 5LL << 30) == 1, "%s",
	     ename(errno));
	TRUE("stat.size_beyond_4gib", size_of("big5g") == (5LL << 30) + 1, "size %lld",
	     size_of("big5g"));
	buf[0] = 0;
	TRUE("pread.beyond_4gib", fd >= 0 && pread(fd, buf, 1, 5LL << 30) == 1 && buf[0] == 'z',
	     "not read back");
	if (fd >= 0)
		close(fd);
	unlink("big5g");

	/* O_APPEND writes at the end whatever the offset. */
	mkfile("a1", 0644, "0123");
	fd = open("a1", O_WRONLY | O_APPEND);
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
	TRUE("append.writes_at_end",
	     fd >= 0 && write(fd, "45", 2) == 2 && slurp("a1", buf, sizeof(buf)) == 6 &&
		     !strcmp(buf, "012345"),
	     "file is \"%s\"", buf);
	TRUE("append.offset_is_size", fd >= 0 && lseek(fd, 0, SEEK_CUR) == 6, "offset %lld",
	     fd >= 0 ? (long long)lseek(fd, 0, SEEK_CUR) : -1LL);
	if (fd >= 0)
		close(fd);

	/* dup'd descriptors share one offset. */
	fd = open("a1", O_RDONLY);
	if (fd >= 0) {
		int fd2 = dup(fd);
		char c = 0;

		read(fd, buf, 2);
		TRUE("dup.shares_offset", fd2 >= 0 && read(fd2, &c, 1) == 1 && c == '2',
		     "read '%c'", c);
		close(fd2);
		close(fd);
	}

	/* Truncation. */
	mkfile("tr", 0644, "abcdefgh");
	set_past("tr");
	TRUE("truncate.shrink", !truncate("tr", 3) && slurp("tr", buf, sizeof(buf)) == 3 &&
					!strcmp(buf, "abc"),
	     "file is \"%s\"", buf);
	TRUE("truncate.sets_mtime", mtime_moved("tr"), "mtime still in the past");
	fd = open("tr", O_RDWR);
	same = fd >= 0 && !ftruncate(fd, 4096) && size_of("tr") == 4096 &&
	       pread(fd, buf, 8, 3) == 8;
	for (i = 0; same && i < 8; i++)
		same = buf[i] == 0;
	TRUE("ftruncate.grow_reads_zeros", same, "not zeros past the old end");
	if (fd >= 0)
		close(fd);
	fd = open("tr", O_RDONLY);
	ERR("ftruncate.rdonly_fd", fd < 0 ? 0 : ftruncate(fd, 0), EINVAL);
	if (fd >= 0)
		close(fd);
	ERR("truncate.directory", truncate("d1", 0), EISDIR);
	ERR("truncate.negative", truncate("tr", -1), EINVAL);

	/* O_DIRECT, aligned. */
	fd = open("od", O_CREAT | O_RDWR | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0) {
		line(0, "o_direct.write_read", "open: %s", ename(errno));
	} else {
		void *p = NULL;

		if (posix_memalign(&p, 4096, 8192) == 0) {
			memset(p, 'D', 8192);
			same = pwrite(fd, p, 8192, 0) == 8192;
			memset(p, 0, 8192);
			same = same && pread(fd, p, 8192, 0) == 8192 && ((char *)p)[8191] == 'D';
			TRUE("o_direct.write_read", same, "%s", ename(errno));
			free(p);
		}
		close(fd);
	}

	/* mmap: shared writes reach the file, private ones do not. */
	mkfile("mm", 0644, NULL);
	truncate("mm", 8192);
	fd = open("mm", O_RDWR);
	if (fd >= 0) {
		char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		char *q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);

		if (p != MAP_FAILED && q != MAP_FAILED) {
			memcpy(p + 4096, "shared", 6);
			msync(p, 8192, MS_SYNC);
			TRUE("mmap.shared_write_reaches_file",
			     pread(fd, buf, 6, 4096) == 6 && !memcmp(buf, "shared", 6), "not in the file");
			TRUE("mmap.private_sees_file", !memcmp(q + 4096, "shared", 6),
			     "the private map does not see the shared write");
			memcpy(q, "private", 7);
			TRUE("mmap.private_write_stays_private",
			     pread(fd, buf, 7, 0) == 7 && memcmp(buf, "private", 7), "in the file");
			pwrite(fd, "written", 7, 100);
			TRUE("mmap.shared_sees_write", !memcmp(p + 100, "written", 7),
			     "the shared map does not see write(2)");
		} else {
			line(0, "mmap.shared_write_reaches_file", "mmap: %s", ename(errno));
		}
		if (p != MAP_FAILED)
			munmap(p, 8192);
		if (q != MAP_FAILED)
			munmap(q, 8192);
		close(fd);
	}

	/* An open file that is unlinked keeps its data. */
	mkfile("ul", 0644, "kept");
	fd = open("ul", O_RDWR);
	TRUE("unlink.open_file", fd >= 0 && unlink("ul") == 0, "%s", ename(errno));
	TRUE("unlink.open_file_still_readable",
	     fd >= 0 && pwrite(fd, "more", 4, 4) == 4 && pread(fd, buf, 8, 0) == 8 &&
		     !memcmp(buf, "keptmore", 8),
	     "data lost");
	TRUE("unlink.open_file_gone_by_name", access("ul", F_OK) == -1 && errno == ENOENT,
	     "still there");
	TRUE("unlink.open_file_nlink_0", fd >= 0 && !fstat(fd, &st) && st.st_nlink == 0,
	     "nlink %ld", (long)st.st_nlink);
	if (fd >= 0)
		close(fd);

	/* So does an open file another one is renamed over. */
	mkfile("ro", 0644, "replaced");
	mkfile("rn", 0644, "new");
	fd = open("ro", O_RDONLY);
	TRUE("rename.over_open_file",
	     fd >= 0 && !rename("rn", "ro") && pread(fd, buf, 8, 0) == 8 &&
		     !memcmp(buf, "replaced", 8),
	     "the open file's data is lost");
	TRUE("rename.over_open_file_new_name", slurp("ro", buf, sizeof(buf)) == 3, "ro is \"%s\"",
	     buf);
	if (fd >= 0)
		close(fd);
	{
		int dots;

		TRUE("unlink.open_file_closed_leaves_no_name", entries(".", ".", &dots) == 0,
		     "a hidden name is left");
	}
}

/* ---- user A: directories ---------------------------------------------------- */

static void dir_checks(void)
{
	char name[300];
	int i, n, dots, ok = 1;

	OK("mkdir.new", mkdir("d2", 0755));
	TRUE("mkdir.mode", mode_of("d2") == 0755, "mode %o", mode_of("d2"));
	ERR("mkdir.existing", mkdir("d2", 0755), EEXIST);
	ERR("mkdir.over_file", mkdir("c1", 0755), EEXIST);
	ERR("mkdir.under_file", mkdir("c1/d", 0755), ENOTDIR);
	ERR("mkdir.missing_parent", mkdir("nosuch/d", 0755), ENOENT);
	TRUE("mkdir.nlink_2", nlink_of("d2") == 2, "nlink %ld", nlink_of("d2"));
	mkdir("d2/sub", 0755);
	TRUE("mkdir.parent_nlink_3", nlink_of("d2") == 3, "nlink %ld", nlink_of("d2"));
	mkfile("d2/f", 0644, "x");
	ERR("rmdir.not_empty", rmdir("d2"), ENOTEMPTY);
	ERR("rmdir.file", rmdir("d2/f"), ENOTDIR);
	ERR("rmdir.dot", rmdir("d2/sub/."), EINVAL);
	ERR("rmdir.missing", rmdir("nosuch"), ENOENT);
	ERR("unlink.directory", unlink("d2/sub"), EISDIR);
	OK("rmdir.empty", rmdir("d2/sub"));
	TRUE("rmdir.parent_nlink_2", nlink_of("d2") == 2, "nlink %ld", nlink_of("d2"));

	/* A directory's mtime follows creates and removals in it. */
	set_past("d2");
	mkfile("d2/g", 0644, NULL);
	TRUE("dir.create_sets_mtime", mtime_moved("d2"), "mtime still in the past");
	set_past("d2");
	unlink("d2/g");
	TRUE("dir.unlink_sets_mtime", mtime_moved("d2"), "mtime still in the past");

	/* readdir: every name once, and . and .. */
	mkdir("many", 0755);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "many/entry-%03d", i);
		if (mkfile(name, 0644, NULL))
			ok = 0;
	}
	n = entries("many", "entry-", &dots);
	TRUE("readdir.300_entries", ok && n == 300, "%d entries", n);
	TRUE("readdir.dot_and_dotdot", dots == 2, "%d of them", dots);
	for (i = 0; i < 300; i += 2) {
		snprintf(name, sizeof(name), "many/entry-%03d", i);
		unlink(name);
	}
	n = entries("many", "entry-", &dots);
	TRUE("readdir.after_unlinks", n == 150, "%d entries, expected 150", n);
	{
		/* Removing every entry while reading: each name seen at most once. */
		DIR *d = opendir("many");
		struct dirent *e;
		int seen = 0, twice = 0;
		static unsigned char mark[300];

		memset(mark, 0, sizeof(mark));
		while (d && (e = readdir(d))) {
			int k;

			if (sscanf(e->d_name, "entry-%d", &k) != 1 || k < 0 || k >= 300)
				continue;
			twice += mark[k]++ > 0;
			seen++;
			snprintf(name, sizeof(name), "many/%s", e->d_name);
			unlink(name);
		}
		if (d)
			closedir(d);
		TRUE("readdir.unlink_while_reading", seen == 150 && !twice,
		     "%d seen, %d twice", seen, twice);
	}
	OK("rmdir.emptied", rmdir("many"));
}

/* ---- user A: links, symlinks, renames --------------------------------------- */

static void link_checks(void)
{
	char buf[256];
	struct stat a, b;

	mkfile("l1", 0644, "linked");
	OK("link.new", link("l1", "l2"));
	TRUE("link.nlink_2", nlink_of("l1") == 2 && nlink_of("l2") == 2, "nlink %ld, %ld",
	     nlink_of("l1"), nlink_of("l2"));
	TRUE("link.same_inode", !stat("l1", &a) && !stat("l2", &b) && a.st_ino == b.st_ino,
	     "inodes differ");
	ERR("link.existing", link("l1", "c1"), EEXIST);
	ERR("link.directory", link("d1", "d1-link"), EPERM);
	ERR("link.missing", link("nosuch", "l3"), ENOENT);
	unlink("l1");
	TRUE("link.unlink_one", nlink_of("l2") == 1 && slurp("l2", buf, sizeof(buf)) == 6,
	     "nlink %ld", nlink_of("l2"));

	OK("symlink.new", symlink("../some/where", "sy"));
	TRUE("symlink.readlink",
	     readlink("sy", buf, sizeof(buf)) == 13 && !memcmp(buf, "../some/where", 13),
	     "readlink gave something else");
	TRUE("symlink.lstat", !lstat("sy", &a) && S_ISLNK(a.st_mode) && a.st_size == 13,
	     "mode %o size %lld", a.st_mode, (long long)a.st_size);
	ERR("symlink.dangling_stat", stat("sy", &a), ENOENT);
	ERR("symlink.existing", symlink("x", "c1"), EEXIST);
	ERR("readlink.not_a_symlink", readlink("c1", buf, sizeof(buf)), EINVAL);
	symlink("loop2", "loop1");
	symlink("loop1", "loop2");
	ERR("symlink.loop", open("loop1", O_RDONLY), ELOOP);
	symlink("l2", "tol2");
	TRUE("symlink.followed", slurp("tol2", buf, sizeof(buf)) == 6 && !strcmp(buf, "linked"),
	     "read \"%s\"", buf);
	TRUE("symlink.stat_follows", !stat("tol2", &a) && S_ISREG(a.st_mode), "not a file");
	memset(buf, 'y', 255);
	buf[255] = 0;
	OK("symlink.long_target", symlink(buf, "longsym"));
}

static void rename_checks(void)
{
	char buf[64];
	struct timespec before;

	mkfile("r1", 0644, "one");
	mkfile("r2", 0644, "two");
	link("r2", "r2-link");
	OK("rename.over_file", rename("r1", "r2"));
	TRUE("rename.over_file_content", slurp("r2", buf, sizeof(buf)) == 3 && !strcmp(buf, "one"),
	     "r2 is \"%s\"", buf);
	TRUE("rename.old_name_gone", access("r1", F_OK) == -1, "r1 still there");
	TRUE("rename.replaced_inode_nlink", nlink_of("r2-link") == 1, "nlink %ld",
	     nlink_of("r2-link"));
	mkdir("rd1", 0755);
	mkdir("rd2", 0755);
	mkdir("rd3", 0755);
	mkfile("rd3/f", 0644, NULL);
	ERR("rename.file_over_dir", rename("r2", "rd1"), EISDIR);
	ERR("rename.dir_over_file", rename("rd1", "r2"), ENOTDIR);
	ERR("rename.dir_over_nonempty_dir", rename("rd1", "rd3"), ENOTEMPTY);
	OK("rename.dir_over_empty_dir", rename("rd1", "rd2"));
	ERR("rename.into_own_subdir", rename("rd2", "rd2/sub"), EINVAL);
	ERR("rename.missing", rename("nosuch", "x"), ENOENT);
	link("r2", "r2-same");
	OK("rename.same_inode_is_noop", rename("r2", "r2-same"));
	TRUE("rename.same_inode_keeps_both", access("r2", F_OK) == 0 && access("r2-same", F_OK) == 0,
	     "a name went away");
	mkdir("rd2/in", 0755);
	OK("rename.dir_across_dirs", rename("rd2/in", "rd3/in"));
	TRUE("rename.dir_nlinks", nlink_of("rd2") == 2 && nlink_of("rd3") == 3, "nlink %ld, %ld",
	     nlink_of("rd2"), nlink_of("rd3"));
	{
		struct stat p, q;

		TRUE("rename.dir_dotdot_follows", !stat("rd3/in/..", &p) && !stat("rd3", &q) &&
						      p.st_ino == q.st_ino,
		     "rd3/in/.. is not rd3");
	}
	before = ctime_of("r2-same");
	pause_ms(30);
	rename("r2-same", "r2-moved");
	TRUE("rename.sets_ctime", ctime_after("r2-moved", &before), "ctime unchanged");
	mkfile("nr", 0644, "nr");
	ERR("renameat2.noreplace_existing",
	    renameat2(AT_FDCWD, "nr", AT_FDCWD, "r2-moved", RENAME_NOREPLACE), EEXIST);
	OK("renameat2.noreplace_new", renameat2(AT_FDCWD, "nr", AT_FDCWD, "nr2", RENAME_NOREPLACE));
	mkfile("xa", 0644, "a");
	mkfile("xb", 0644, "bb");
	OK("renameat2.exchange", renameat2(AT_FDCWD, "xa", AT_FDCWD, "xb", RENAME_EXCHANGE));
	TRUE("renameat2.exchange_swaps", size_of("xa") == 2 && size_of("xb") == 1,
	     "sizes %lld, %lld", size_of("xa"), size_of("xb"));
}

/* ---- user A: attributes, times, xattrs, special files, locks ------------------- */

static void attr_checks(void)
{
	struct timespec ts[2] = { { 1234567890, 987654321 }, { 1300000000, 123456789 } };
	struct timespec before;
	struct stat st;
	struct statvfs vfs;
	int fd;

	mkfile("at", 0644, "attrs");
	before = ctime_of("at");
	pause_ms(30);
	OK("chmod.ok", chmod("at", 0600));
	TRUE("chmod.mode", mode_of("at") == 0600, "mode %o", mode_of("at"));
	TRUE("chmod.sets_ctime", ctime_after("at", &before), "ctime unchanged");
	fd = open("at", O_RDONLY);
	OK("fchmod.ok", fd < 0 ? -1 : fchmod(fd, 0640));
	if (fd >= 0)
		close(fd);
	TRUE("fchmod.mode", mode_of("at") == 0640, "mode %o", mode_of("at"));
	OK("utimensat.ns", utimensat(AT_FDCWD, "at", ts, 0));
	TRUE("utimensat.ns_atime", !stat("at", &st) && st.st_atim.tv_sec == ts[0].tv_sec &&
					   st.st_atim.tv_nsec == ts[0].tv_nsec,
	     "atime %lld.%09ld", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec);
	TRUE("utimensat.ns_mtime", st.st_mtim.tv_sec == ts[1].tv_sec &&
					   st.st_mtim.tv_nsec == ts[1].tv_nsec,
	     "mtime %lld.%09ld", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	{
		struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };

		OK("utimensat.omit_now", utimensat(AT_FDCWD, "at", omit, 0));
		TRUE("utimensat.omit_keeps_atime", !stat("at", &st) && st.st_atim.tv_sec == ts[0].tv_sec &&
							   st.st_atim.tv_nsec == ts[0].tv_nsec,
		     "atime %lld", (long long)st.st_atim.tv_sec);
		TRUE("utimensat.now_sets_mtime", st.st_mtim.tv_sec != ts[1].tv_sec ||
							 st.st_mtim.tv_nsec != ts[1].tv_nsec,
		     "mtime %lld", (long long)st.st_mtim.tv_sec);
	}
	set_past("at");
	fd = open("at", O_WRONLY);
	before = ctime_of("at");
	pause_ms(30);
	TRUE("write.sets_mtime", fd >= 0 && write(fd, "W", 1) == 1 && mtime_moved("at"),
	     "mtime still in the past");
	TRUE("write.sets_ctime", ctime_after("at", &before), "ctime unchanged");
	if (fd >= 0)
		close(fd);

	/* Owners: A may give a file to a group it is in, not to anyone else. */
	OK("chown.own_uid_noop", chown("at", UID_A, -1));
	OK("chown.group_member", chown("at", -1, GID_A2));
	TRUE("chown.group_set", !stat("at", &st) && st.st_gid == GID_A2, "gid %u", st.st_gid);
	ERR("chown.other_uid", chown("at", UID_B, -1), EPERM);
	ERR("chown.other_group", chown("at", -1, GID_B), EPERM);

	/* A write by a non-root owner clears set-user-id. */
	mkfile("suid", 0755, "#!/bin/sh\n");
	chmod("suid", 04755);
	TRUE("chmod.setuid_by_owner", mode_of("suid") == 04755, "mode %o", mode_of("suid"));
	fd = open("suid", O_WRONLY | O_APPEND);
	if (fd >= 0) {
		write(fd, "\n", 1);
		close(fd);
	}
	TRUE("write.clears_setuid", mode_of("suid") == 0755, "mode %o", mode_of("suid"));

	/* Set-group-id directories: their group and their bit pass down. */
	mkdir("sg", 0755);
	chown("sg", -1, GID_A2);
	chmod("sg", 02775);
	mkfile("sg/f", 0644, NULL);
	mkdir("sg/d", 0755);
	TRUE("setgid_dir.file_group", !stat("sg/f", &st) && st.st_gid == GID_A2, "gid %u",
	     st.st_gid);
	TRUE("setgid_dir.subdir_group_and_bit", !stat("sg/d", &st) && st.st_gid == GID_A2 &&
							(st.st_mode & S_ISGID),
	     "gid %u mode %o", st.st_gid, st.st_mode & 07777);

	TRUE("access.rw", access("c1", R_OK | W_OK) == 0, "%s", ename(errno));
	ERR("access.x_on_0644", access("c1", X_OK), EACCES);
	TRUE("statvfs.sane", !statvfs(".", &vfs) && vfs.f_bsize > 0 && vfs.f_blocks >= vfs.f_bfree &&
				     vfs.f_namemax >= 255,
	     "bsize %lu blocks %llu free %llu namemax %lu", vfs.f_bsize,
	     (unsigned long long)vfs.f_blocks, (unsigned long long)vfs.f_bfree, vfs.f_namemax);
}

static void xattr_checks(void)
{
	char buf[64];
	ssize_t n;

	mkfile("xa1", 0644, NULL);
	OK("xattr.set", setxattr("xa1", "user.pc", "value", 5, 0));
	n = getxattr("xa1", "user.pc", buf, sizeof(buf));
	TRUE("xattr.get", n == 5 && !memcmp(buf, "value", 5), "got %zd", n);
	TRUE("xattr.size_query", getxattr("xa1", "user.pc", NULL, 0) == 5, "not 5");
	ERR("xattr.small_buffer", getxattr("xa1", "user.pc", buf, 2), ERANGE);
	n = listxattr("xa1", buf, sizeof(buf));
	TRUE("xattr.list", n > 0 && memmem(buf, n, "user.pc", 8), "not listed");
	ERR("xattr.create_existing", setxattr("xa1", "user.pc", "v", 1, XATTR_CREATE), EEXIST);
	ERR("xattr.replace_missing", setxattr("xa1", "user.no", "v", 1, XATTR_REPLACE), ENODATA);
	OK("xattr.remove", removexattr("xa1", "user.pc"));
	ERR("xattr.get_removed", getxattr("xa1", "user.pc", buf, sizeof(buf)), ENODATA);
}

static void special_checks(void)
{
	struct stat st;

	OK("mkfifo.new", mkfifo("fifo", 0644));
	TRUE("mkfifo.is_fifo", !lstat("fifo", &st) && S_ISFIFO(st.st_mode), "mode %o", st.st_mode);
	ERR("mkfifo.existing", mkfifo("fifo", 0644), EEXIST);
	{
		pid_t pid = fork();

		if (pid == 0) {
			int fd = open("fifo", O_WRONLY);

			_exit(fd >= 0 && write(fd, "through", 7) == 7 ? 0 : 1);
		}
		if (pid > 0) {
			int fd = open("fifo", O_RDONLY), status = 1;
			char buf[8] = { 0 };
			ssize_t n = fd >= 0 ? read(fd, buf, 7) : -1;

			waitpid(pid, &status, 0);
			TRUE("mkfifo.carries_data", n == 7 && !memcmp(buf, "through", 7) && status == 0,
			     "read %zd", n);
			if (fd >= 0)
				close(fd);
		}
	}
}

static void lock_checks(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	int fd = open("lk", O_CREAT | O_RDWR, 0644);
	pid_t pid;
	int status = -1;

	OK("fcntl.setlk", fd < 0 ? -1 : fcntl(fd, F_SETLK, &fl));
	pid = fork();
	if (pid == 0) {
		struct flock g = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1 };
		int f = open("lk", O_RDWR);

		if (f < 0)
			_exit(10);
		if (fcntl(f, F_SETLK, &g) == 0)
			_exit(11);
		if (errno != EAGAIN && errno != EACCES)
			_exit(12);
		if (fcntl(f, F_GETLK, &g) || g.l_type != F_WRLCK || g.l_pid != getppid())
			_exit(13);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	TRUE("fcntl.conflict_seen_by_other_process", WIFEXITED(status) && WEXITSTATUS(status) == 0,
	     "child status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	OK("flock.exclusive", fd < 0 ? -1 : flock(fd, LOCK_EX | LOCK_NB));
	if (fd >= 0)
		close(fd);
}

/* Files user B's checks work on. */
static void prepare_for_b(void)
{
	mkfile("priv", 0600, "private");
	mkfile("pub", 0644, "public");
	mkdir("sticky", 0777);
	chmod("sticky", 01777);
	mkfile("sticky/a-file", 0644, NULL);
	mkdir("x711", 0711);
	mkfile("x711/f", 0644, "seen");
	mkdir("x700", 0700);
	mkfile("x700/f", 0644, NULL);
	chmod(".", 0755);
}

/* ---- user B, in A's directory ----------------------------------------------------- */

static void b_checks(void)
{
	struct timespec ts[2] = { { 5, 0 }, { 5, 0 } };
	char buf[64];
	struct stat st;
	int fd;

	ERR("perm.read_0600_of_other", open("priv", O_RDONLY), EACCES);
	fd = open("pub", O_RDONLY);
	OK("perm.read_0644_of_other", fd);
	if (fd >= 0)
		close(fd);
	ERR("perm.write_0644_of_other", open("pub", O_WRONLY), EACCES);
	ERR("perm.truncate_other", truncate("pub", 0), EACCES);
	ERR("perm.create_in_0755_dir_of_other", open("b-new", O_CREAT | O_WRONLY, 0644), EACCES);
	ERR("perm.unlink_in_0755_dir_of_other", unlink("pub"), EACCES);
	ERR("perm.mkdir_in_0755_dir_of_other", mkdir("b-dir", 0755), EACCES);
	ERR("perm.rename_in_0755_dir_of_other", rename("pub", "pub2"), EACCES);
	ERR("perm.chmod_other", chmod("pub", 0666), EPERM);
	ERR("perm.utimes_explicit_other", utimensat(AT_FDCWD, "pub", ts, 0), EPERM);
	ERR("perm.utimes_now_unwritable", utimensat(AT_FDCWD, "pub", NULL, 0), EACCES);
	ERR("perm.access_w_other", access("pub", W_OK), EACCES);
	TRUE("perm.access_r_other", access("pub", R_OK) == 0, "%s", ename(errno));
	fd = open("sticky/b-file", O_CREAT | O_WRONLY, 0644);
	OK("sticky.create", fd);
	if (fd >= 0)
		close(fd);
	ERR("sticky.unlink_others_file", unlink("sticky/a-file"), EPERM);
	ERR("sticky.rename_others_file", rename("sticky/a-file", "sticky/mine"), EPERM);
	TRUE("perm.search_only_dir_stat", stat("x711/f", &st) == 0, "%s", ename(errno));
	TRUE("perm.search_only_dir_read", slurp("x711/f", buf, sizeof(buf)) == 4, "%s",
	     ename(errno));
	ERR("perm.search_only_dir_list", opendir("x711") ? 0 : -1, EACCES);
	ERR("perm.no_search_dir_stat", stat("x700/f", &st), EACCES);
	ERR("perm.setxattr_other", setxattr("pub", "user.b", "v", 1, 0), EACCES);
}

/* User A again: what B left in A's sticky directory is A's to remove. */
static void a_after_b_checks(void)
{
	OK("sticky.dir_owner_unlinks_others_file", unlink("sticky/b-file"));
}

/* ---- the driver ----------------------------------------------------------------- */

static int checks, failed;

/* as_user: runs fn as uid/gid (with one more group, if any) in the
 * directory `dir`, relaying and counting its lines. */
static void as_user(uid_t uid, gid_t gid, gid_t more, const char *dir, void (*fn)(void))
{
	int p[2];
	pid_t pid;
	FILE *in;
	char buf[800];
	int status;

	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		gid_t groups[2] = { gid, more };

		close(p[0]);
		dup2(p[1], 1);
		close(p[1]);
		if (setgroups(more ? 2 : 1, groups) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid)) {
			line(0, "setup.become_user", "%s", ename(errno));
			_exit(1);
		}
		if (chdir(dir)) {
			line(0, "setup.chdir", "%s: %s", dir, ename(errno));
			_exit(1);
		}
		fn();
		_exit(0);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	while (in && fgets(buf, sizeof(buf), in)) {
		checks++;
		if (strncmp(buf, "ok ", 3))
			failed++;
		fputs(buf, stdout);
		fflush(stdout);
	}
	if (in)
		fclose(in);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("not ok setup.child_exit: status %d\n", status);
		checks++;
		failed++;
	}
}

static void a_all(void)
{
	if (mkdir("a", 0755) || chdir("a")) {
		line(0, "setup.mkdir_a", "%s", ename(errno));
		return;
	}
	open_checks();
	rw_checks();
	dir_checks();
	link_checks();
	rename_checks();
	attr_checks();
	xattr_checks();
	special_checks();
	lock_checks();
	prepare_for_b();
}

static void a_clean(void)
{
	if (chdir("a") == 0) {
		a_after_b_checks();
		if (chdir(".."))
			line(0, "setup.chdir_back", "%s", ename(errno));
	}
	/* (Everything under a/ goes: rm -r, by A, who owns all of it.) */
	if (system("chmod -R u+rwx a 2>/dev/null; rm -rf a"))
		line(0, "setup.remove_a", "rm -rf failed");
}

int main(int argc, char **argv)
{
	char base[PATH_MAX], a[PATH_MAX + 8];

	if (argc != 2) {
		fprintf(stderr, "usage: posixcheck DIR\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "posixcheck: run it as root (it becomes users %d and %d)\n", UID_A,
			UID_B);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(base, sizeof(base), "%s/pc-%d", argv[1], (int)getpid());
	if (mkdir(base, 0777) || chmod(base, 0777)) {
		fprintf(stderr, "posixcheck: cannot make %s: %s\n", base, strerror(errno));
		return 2;
	}
	snprintf(a, sizeof(a), "%s/a", base);
	as_user(UID_A, GID_A, GID_A2, base, a_all);
	as_user(UID_B, GID_B, 0, a, b_checks);
	as_user(UID_A, GID_A, GID_A2, base, a_clean);
	if (rmdir(base))
		printf("posixcheck: %s left behind: %s\n", base, strerror(errno));
	printf("posixcheck: %d checks, %d passed, %d failed\n", checks, checks - failed, failed);
	return 0;
}
