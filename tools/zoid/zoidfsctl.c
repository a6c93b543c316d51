// SPDX-License-Identifier: GPL-2.0
/*
 * zoidfsctl: the zoidfs plug-in's operations from the command line through
 * /dev/zoid (what fs/zoidfs forwards from the VFS), on the ION's export.
 * Paths are walked from the export's root with one lookup per component;
 * `-e NAME` first picks a named export (/sys/kernel/zoid/zoidfs_exports)
 * instead of the default one.
 *
 *   zoidfsctl ls PATH                 entries (name, type) in readdir order,
 *                                     read in small batches (cookies)
 *   zoidfsctl stat PATH               mode nlink uid gid size mtime
 *   zoidfsctl cat PATH                the file's bytes to stdout
 *   zoidfsctl put PATH                stdin into the file (created, truncated)
 *   zoidfsctl mkdir PATH MODE | rm PATH | rmdir PATH
 *   zoidfsctl mv FROM TO [noreplace]
 *   zoidfsctl symlink TARGET PATH | readlink PATH | link FROM TO
 *   zoidfsctl truncate PATH SIZE | chmod PATH MODE | mtime PATH SEC NSEC
 *   zoidfsctl statfs
 *   zoidfsctl handle PATH             the handle, in hex
 *   zoidfsctl hstat HEX               stat by handle (a stale one: ESTALE)
 *
 * On failure the errno is printed as "(N)" at the end of the line and the
 * status is 1, so tests can expect ENOENT and friends.
 */
#include <stdio.h>
#include <stdlib.h>

#include "zoid.h"

enum { FS_ID = 4 };
enum { FS_ROOT = 1, FS_LOOKUP, FS_GETATTR, FS_SETATTR, FS_CREATE, FS_MKDIR,
       FS_SYMLINK, FS_LINK, FS_REMOVE, FS_RENAME, FS_READLINK, FS_READDIR,
       FS_READ, FS_WRITE, FS_COMMIT, FS_STATFS };
#define MAX_HANDLE 64
#define CHUNK (64 * 1024)

struct handle { uint8_t len, bytes[MAX_HANDLE]; };
struct attr {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	int64_t size, mtime_sec;
	uint32_t mtime_nsec;
};

static int zfd;
static const char *export_name = "";
static uint8_t abuf[CHUNK + 1024], rbuf[CHUNK + 1024];

static int fail(const char *what, int64_t err)
{
	int e = (int)(err < 0 ? -err : err);

	printf("zoidfsctl: %s: %s (%d)\n", what, strerror(e), e);
	return 1;
}

/* One call: ret (>= 0) or -errno; the reply (after ret) in *r. */
static int64_t call(uint16_t fn, struct zbuf *a, struct zbuf *r)
{
	int err;

	*r = (struct zbuf){ rbuf, 0, sizeof(rbuf), 0 };
	if (a->err)
		return -a->err;
	err = zoid_call(zfd, FS_ID, fn, a, r);
	if (err)
		return err;
	return (int64_t)zget_u64(r);
}

#define ARGS struct zbuf a = { abuf, 0, sizeof(abuf), 0 }, r

static void put_str(struct zbuf *b, const char *s) { zput_bytes(b, s, (uint32_t)strlen(s)); }
static void put_handle(struct zbuf *b, const struct handle *h) { zput(b, h, 1 + MAX_HANDLE); }

static void get_handle(struct zbuf *b, struct handle *h)
{
	const uint8_t *p = zget(b, 1 + MAX_HANDLE);

	if (p)
		memcpy(h, p, 1 + MAX_HANDLE);
}

/* The wire Stat: dev ino mode nlink uid gid rdev size blksize blocks
 * atime(sec nsec) mtime(sec nsec) ctime(sec nsec). */
static void get_attr(struct zbuf *b, struct attr *at)
{
	zget_u64(b);
	at->ino = zget_u64(b);
	at->mode = zget_u32(b);
	at->nlink = zget_u32(b);
	at->uid = zget_u32(b);
	at->gid = zget_u32(b);
	zget_u64(b);
	at->size = (int64_t)zget_u64(b);
	zget_u32(b);
	zget_u64(b);
	zget_u64(b);
	zget_u32(b);
	at->mtime_sec = (int64_t)zget_u64(b);
	at->mtime_nsec = zget_u32(b);
	zget_u64(b);
	zget_u32(b);
}

static int64_t fs_root(struct handle *h, struct attr *at)
{
	ARGS;
	int64_t ret;

	put_str(&a, export_name);
	ret = call(FS_ROOT, &a, &r);
	if (ret >= 0) {
		get_handle(&r, h);
		get_attr(&r, at);
	}
	return r.err ? -EBADMSG : ret;
}

static int64_t fs_lookup(const struct handle *dir, const char *name, struct handle *h,
			 struct attr *at)
{
	ARGS;
	int64_t ret;

	put_handle(&a, dir);
	put_str(&a, name);
	ret = call(FS_LOOKUP, &a, &r);
	if (ret >= 0) {
		get_handle(&r, h);
		get_attr(&r, at);
	}
	return r.err ? -EBADMSG : ret;
}

/* Walks PATH from the root; with `parent`, stops before the last
 * component and returns it in *last (pointing into a static copy). */
static int64_t walk(const char *path, struct handle *h, struct attr *at, int parent,
		    const char **last)
{
	static char copy[4096];
	char *comp[256], *p;
	int n = 0, upto;
	int64_t ret;

	snprintf(copy, sizeof(copy), "%s", path);
	for (p = strtok(copy, "/"); p && n < 256; p = strtok(NULL, "/"))
		comp[n++] = p;
	if (parent && n == 0)
		return -EINVAL;	/* no last component */
	ret = fs_root(h, at);
	upto = parent ? n - 1 : n;
	for (int i = 0; i < upto && ret >= 0; i++)
		ret = fs_lookup(h, comp[i], h, at);
	if (parent)
		*last = comp[n - 1];
	return ret;
}

static int64_t fs_getattr(const struct handle *h, struct attr *at)
{
	ARGS;
	int64_t ret;

	put_handle(&a, h);
	ret = call(FS_GETATTR, &a, &r);
	if (ret >= 0)
		get_attr(&r, at);
	return r.err ? -EBADMSG : ret;
}

/* valid: zoidfs setattr bits (1 mode, 8 size, 32 mtime). */
static int64_t fs_setattr(const struct handle *h, uint32_t valid, uint32_t mode, int64_t size,
			  int64_t mtime_sec, uint32_t mtime_nsec)
{
	ARGS;

	put_handle(&a, h);
	zput_u32(&a, valid);
	zput_u32(&a, mode);
	zput_u32(&a, 0);
	zput_u32(&a, 0);
	zput_u64(&a, (uint64_t)size);
	zput_u64(&a, 0);
	zput_u32(&a, 0);
	zput_u64(&a, (uint64_t)mtime_sec);
	zput_u32(&a, mtime_nsec);
	return call(FS_SETATTR, &a, &r);
}

static void print_attr(const struct attr *at)
{
	printf("mode %o nlink %u uid %u gid %u size %lld mtime %lld.%09u\n", at->mode,
	       at->nlink, at->uid, at->gid, (long long)at->size, (long long)at->mtime_sec,
	       at->mtime_nsec);
}

static int cmd_ls(const char *path)
{
	struct handle h;
	struct attr at;
	int64_t cookie = 0, n, ret = walk(path, &h, &at, 0, NULL);
	static uint8_t ents[512];

	if (ret < 0)
		return fail(path, ret);
	for (;;) {
		ARGS;

		put_handle(&a, &h);
		zput_u64(&a, (uint64_t)cookie);
		zput_u32(&a, sizeof(ents));
		n = call(FS_READDIR, &a, &r);
		if (n < 0)
			return fail("readdir", n);
		if (n == 0)
			return 0;
		zget_u32(&r);
		memcpy(ents, zget(&r, (size_t)n), (size_t)n);
		for (int64_t o = 0; o + 19 <= n;) {
			uint16_t len = (uint16_t)(ents[o + 17] << 8 | ents[o + 18]);
			uint64_t off = 0;

			for (int i = 0; i < 8; i++)
				off = off << 8 | ents[o + 8 + i];
			printf("%.*s %u\n", len, (const char *)ents + o + 19, ents[o + 16]);
			cookie = (int64_t)off;
			o += 19 + len;
		}
	}
}

static int cmd_cat(const char *path)
{
	struct handle h;
	struct attr at;
	int64_t off = 0, n, ret = walk(path, &h, &at, 0, NULL);

	if (ret < 0)
		return fail(path, ret);
	for (;;) {
		ARGS;

		put_handle(&a, &h);
		zput_u64(&a, (uint64_t)off);
		zput_u32(&a, CHUNK);
		n = call(FS_READ, &a, &r);
		if (n < 0)
			return fail("read", n);
		if (n == 0)
			return 0;
		zget_u32(&r);
		fwrite(zget(&r, (size_t)n), 1, (size_t)n, stdout);
		off += n;
	}
}

/* create (non-exclusive) or mkdir or symlink at PATH; its handle in *h. */
static int64_t make(uint16_t fn, const char *path, uint32_t mode, const char *target,
		    struct handle *h)
{
	struct handle dir;
	struct attr at;
	const char *last = NULL;
	int64_t ret = walk(path, &dir, &at, 1, &last);
	ARGS;

	if (ret < 0)
		return ret;
	put_handle(&a, &dir);
	put_str(&a, last);
	if (fn == FS_SYMLINK) {
		put_str(&a, target);
	} else {
		zput_u32(&a, mode);
		if (fn == FS_CREATE)
			zput_u8(&a, 0);
	}
	ret = call(fn, &a, &r);
	if (ret >= 0)
		get_handle(&r, h);
	return ret;
}

static int cmd_put(const char *path)
{
	struct handle h;
	int64_t off = 0, ret = make(FS_CREATE, path, 0644, NULL, &h);
	size_t n;
	static uint8_t data[CHUNK];

	if (ret < 0)
		return fail(path, ret);
	ret = fs_setattr(&h, 8, 0, 0, 0, 0);
	if (ret < 0)
		return fail("truncate", ret);
	while ((n = fread(data, 1, sizeof(data), stdin)) > 0) {
		ARGS;

		put_handle(&a, &h);
		zput_u64(&a, (uint64_t)off);
		zput_bytes(&a, data, (uint32_t)n);
		zput_u8(&a, 0);
		ret = call(FS_WRITE, &a, &r);
		if (ret < 0)
			return fail("write", ret);
		if ((size_t)ret != n)
			return fail("short write", EIO);
		off += ret;
	}
	{
		ARGS;

		put_handle(&a, &h);
		zput_u8(&a, 0);
		ret = call(FS_COMMIT, &a, &r);
	}
	return ret < 0 ? fail("commit", ret) : 0;
}

static int cmd_remove(const char *path, int is_dir)
{
	struct handle dir;
	struct attr at;
	const char *last = NULL;
	int64_t ret = walk(path, &dir, &at, 1, &last);
	ARGS;

	if (ret < 0)
		return fail(path, ret);
	put_handle(&a, &dir);
	put_str(&a, last);
	zput_u8(&a, (uint8_t)is_dir);
	ret = call(FS_REMOVE, &a, &r);
	return ret < 0 ? fail("remove", ret) : 0;
}

static int cmd_mv(const char *from, const char *to, uint32_t flags)
{
	struct handle fd, td;
	struct attr at;
	const char *fl = NULL, *tl = NULL;
	static char from_copy[4096];
	int64_t ret = walk(from, &fd, &at, 1, &fl);
	ARGS;

	if (ret < 0)
		return fail(from, ret);
	snprintf(from_copy, sizeof(from_copy), "%s", fl);	/* walk reuses its buffer */
	ret = walk(to, &td, &at, 1, &tl);
	if (ret < 0)
		return fail(to, ret);
	put_handle(&a, &fd);
	put_str(&a, from_copy);
	put_handle(&a, &td);
	put_str(&a, tl);
	zput_u32(&a, flags);
	ret = call(FS_RENAME, &a, &r);
	return ret < 0 ? fail("rename", ret) : 0;
}

static int cmd_link(const char *from, const char *to)
{
	struct handle h, dir;
	struct attr at;
	const char *last = NULL;
	int64_t ret = walk(from, &h, &at, 0, NULL);
	ARGS;

	if (ret < 0)
		return fail(from, ret);
	ret = walk(to, &dir, &at, 1, &last);
	if (ret < 0)
		return fail(to, ret);
	put_handle(&a, &h);
	put_handle(&a, &dir);
	put_str(&a, last);
	ret = call(FS_LINK, &a, &r);
	if (ret < 0)
		return fail("link", ret);
	get_attr(&r, &at);
	printf("nlink %u\n", at.nlink);
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int main(int argc, char **argv)
{
	const char *cmd;
	struct handle h;
	struct attr at;
	int64_t ret;

	if (argc > 2 && !strcmp(argv[1], "-e")) {
		export_name = argv[2];
		argv += 2;
		argc -= 2;
	}
	cmd = argc > 1 ? argv[1] : "";

	zfd = open("/dev/zoid", O_RDWR);
	if (zfd < 0)
		return fail("/dev/zoid", errno);
	if (argc == 3 && !strcmp(cmd, "ls"))
		return cmd_ls(argv[2]);
	if (argc == 3 && !strcmp(cmd, "cat"))
		return cmd_cat(argv[2]);
	if (argc == 3 && !strcmp(cmd, "put"))
		return cmd_put(argv[2]);
	if (argc == 3 && (!strcmp(cmd, "rm") || !strcmp(cmd, "rmdir")))
		return cmd_remove(argv[2], !strcmp(cmd, "rmdir"));
	if ((argc == 4 || argc == 5) && !strcmp(cmd, "mv"))
		return cmd_mv(argv[2], argv[3], argc == 5 && !strcmp(argv[4], "noreplace"));
	if (argc == 4 && !strcmp(cmd, "link"))
		return cmd_link(argv[2], argv[3]);
	if (argc == 4 && !strcmp(cmd, "mkdir")) {
		ret = make(FS_MKDIR, argv[2], (uint32_t)strtoul(argv[3], NULL, 8), NULL, &h);
		return ret < 0 ? fail(argv[2], ret) : 0;
	}
	if (argc == 4 && !strcmp(cmd, "symlink")) {
		ret = make(FS_SYMLINK, argv[3], 0, argv[2], &h);
		return ret < 0 ? fail(argv[3], ret) : 0;
	}
	if (argc == 3 && (!strcmp(cmd, "stat") || !strcmp(cmd, "handle"))) {
		ret = walk(argv[2], &h, &at, 0, NULL);
		if (ret < 0)
			return fail(argv[2], ret);
		if (!strcmp(cmd, "stat")) {
			print_attr(&at);
		} else {
			for (int i = 0; i < h.len; i++)
				printf("%02x", h.bytes[i]);
			printf("\n");
		}
		return 0;
	}
	if (argc == 3 && !strcmp(cmd, "hstat")) {
		size_t n = strlen(argv[2]) / 2;

		memset(&h, 0, sizeof(h));
		if (n == 0 || n > MAX_HANDLE)
			return fail("handle", EINVAL);
		h.len = (uint8_t)n;
		for (size_t i = 0; i < n; i++) {
			int hi = hexval(argv[2][2 * i]), lo = hexval(argv[2][2 * i + 1]);

			if (hi < 0 || lo < 0)
				return fail("handle", EINVAL);
			h.bytes[i] = (uint8_t)(hi << 4 | lo);
		}
		ret = fs_getattr(&h, &at);
		if (ret < 0)
			return fail("getattr", ret);
		print_attr(&at);
		return 0;
	}
	if (argc == 3 && !strcmp(cmd, "readlink")) {
		ARGS;

		ret = walk(argv[2], &h, &at, 0, NULL);
		if (ret < 0)
			return fail(argv[2], ret);
		put_handle(&a, &h);
		zput_u32(&a, 4096);
		ret = call(FS_READLINK, &a, &r);
		if (ret < 0)
			return fail("readlink", ret);
		zget_u32(&r);
		printf("%.*s\n", (int)ret, (const char *)zget(&r, (size_t)ret));
		return 0;
	}
	if ((argc == 4 && (!strcmp(cmd, "truncate") || !strcmp(cmd, "chmod"))) ||
	    (argc == 5 && !strcmp(cmd, "mtime"))) {
		ret = walk(argv[2], &h, &at, 0, NULL);
		if (ret < 0)
			return fail(argv[2], ret);
		if (!strcmp(cmd, "truncate"))
			ret = fs_setattr(&h, 8, 0, atoll(argv[3]), 0, 0);
		else if (!strcmp(cmd, "chmod"))
			ret = fs_setattr(&h, 1, (uint32_t)strtoul(argv[3], NULL, 8), 0, 0, 0);
		else
			ret = fs_setattr(&h, 32, 0, 0, atoll(argv[3]), (uint32_t)atol(argv[4]));
		return ret < 0 ? fail(cmd, ret) : 0;
	}
	if (argc == 2 && !strcmp(cmd, "statfs")) {
		ARGS;

		ret = fs_root(&h, &at);
		if (ret < 0)
			return fail("root", ret);
		put_handle(&a, &h);
		ret = call(FS_STATFS, &a, &r);
		if (ret < 0)
			return fail("statfs", ret);
		{
			uint64_t kind = zget_u64(&r);
			uint32_t bsize = zget_u32(&r), frsize = zget_u32(&r);
			uint64_t blocks = zget_u64(&r), bfree = zget_u64(&r);

			printf("type %llx bsize %u frsize %u blocks %llu bfree %llu\n",
			       (unsigned long long)kind, bsize, frsize,
			       (unsigned long long)blocks, (unsigned long long)bfree);
		}
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of zoidfsctl.c\n");
	return 2;
}
