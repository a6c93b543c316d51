/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libzoid: user programs' side of /dev/zoid (one header, no daemon).
 *
 * The ioctl ABI of drivers/zoid/devzoid.rs and a small encoder/decoder for
 * zoid's argument encoding (rust/zoid_proto/src/zoid/marshal.rs): integers
 * big-endian, byte arrays and strings as a u32 length then the bytes,
 * optional values behind a u8 presence marker.  A reply starts with the
 * function's i64 return value, then out values, then an out array.
 */
#ifndef ZOID_USER_H
#define ZOID_USER_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct zoid_ioc_call {
	uint16_t plugin, function;
	uint32_t flags;
	uint32_t timeout_ms;	/* 0: the client's timeout_ms knob */
	uint32_t args_len;
	uint64_t args;		/* marshalled arguments */
	uint64_t reply;		/* buffer for the marshalled results */
	uint32_t reply_cap;
	uint32_t reply_len;	/* out */
	int32_t error;		/* out: 0 or the ION's errno */
	uint32_t reserved;
};

struct zoid_ioc_info {
	uint16_t ion, pad;
	uint32_t max_request, max_reply, workers, max_outstanding, attached;
};

/* f2cn (on an ION, CAP_SYS_ADMIN): copy a file to the same path on the CNs. */
struct zoid_ioc_f2cn {
	int32_t fd;		/* source, open for reading */
	uint32_t mode;		/* permission bits on the CNs; ZOID_F2CN_MODE_KEEP */
	uint64_t path;		/* destination: absolute, NUL-terminated */
	uint64_t nodes;		/* uint16_t target CN ids, or 0: every CN */
	uint32_t nnodes;
	uint32_t timeout_ms;	/* per phase; 0: the timeout_ms knob */
	uint64_t bytes;		/* out: file bytes sent */
	uint32_t cns;		/* out: CNs that have the file */
	uint16_t failed_node;	/* out: the CN that failed, or 0xffff */
	uint16_t reserved;
};
#define ZOID_F2CN_MODE_KEEP 0xffffffffu

#define ZOID_IOC_CALL _IOWR('Z', 1, char[48])
#define ZOID_IOC_INFO _IOWR('Z', 2, char[24])
#define ZOID_IOC_F2CN _IOWR('Z', 3, char[48])

/* Plug-in and function ids (rust/zoid_proto/src/zoid/plugins/). */
enum { ZTEST_ID = 1 };
enum { ZTEST_NULL = 1, ZTEST_ECHO = 2, ZTEST_ADD = 3, ZTEST_SWAP = 4,
       ZTEST_STRLEN = 5, ZTEST_MAYBE = 6, ZTEST_FILL = 7, ZTEST_SLEEP_MS = 8,
       ZTEST_FAIL = 9, ZTEST_RENDEZVOUS = 10 };

enum { JOB_ID = 3 };
enum { JOB_START = 1, JOB_END = 2 };

enum { SAMPLE_ID = 16 };   /* drivers/zoid_sample (an external plug-in module) */
enum { SAMPLE_UPPER = 1, SAMPLE_SERVED = 2, SAMPLE_MEET = 3 };
enum { UNIX_ID = 2 };
enum { UNIX_OPEN = 1, UNIX_OPENAT, UNIX_CLOSE, UNIX_READ, UNIX_WRITE, UNIX_PREAD,
       UNIX_PWRITE, UNIX_LSEEK, UNIX_FSTAT, UNIX_STAT, UNIX_LSTAT, UNIX_FSYNC,
       UNIX_FTRUNCATE, UNIX_MKDIR, UNIX_RMDIR, UNIX_UNLINK, UNIX_RENAME,
       UNIX_READLINK, UNIX_SYMLINK, UNIX_GETDENTS, UNIX_READV, UNIX_WRITEV };

/* The unix plug-in's open flags travel in x86_64 numbering. */
static inline uint32_t zoid_oflags(int f)
{
	static const struct { int local; uint32_t wire; } map[] = {
		{ O_CREAT, 0100 }, { O_EXCL, 0200 }, { O_NOCTTY, 0400 },
		{ O_TRUNC, 01000 }, { O_APPEND, 02000 }, { O_NONBLOCK, 04000 },
		{ O_DIRECTORY, 0200000 }, { O_NOFOLLOW, 0400000 },
		{ O_CLOEXEC, 02000000 },
	};
	uint32_t w = (uint32_t)(f & O_ACCMODE);

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (f & map[i].local)
			w |= map[i].wire;
	return w;
}

/* A buffer being encoded or decoded. */
struct zbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static inline void zput(struct zbuf *b, const void *src, size_t n)
{
	if (b->err || b->len + n > b->cap) {
		b->err = E2BIG;
		return;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static inline void zput_u8(struct zbuf *b, uint8_t v) { zput(b, &v, 1); }

static inline void zput_u32(struct zbuf *b, uint32_t v)
{
	uint8_t x[4] = { v >> 24, v >> 16, v >> 8, v };
	zput(b, x, 4);
}

static inline void zput_u64(struct zbuf *b, uint64_t v)
{
	zput_u32(b, v >> 32);
	zput_u32(b, (uint32_t)v);
}

static inline void zput_bytes(struct zbuf *b, const void *p, uint32_t n)
{
	zput_u32(b, n);
	zput(b, p, n);
}

static inline const uint8_t *zget(struct zbuf *b, size_t n)
{
	const uint8_t *p = b->p + b->len;

	if (b->err || b->len + n > b->cap) {
		b->err = EBADMSG;
		return NULL;
	}
	b->len += n;
	return p;
}

static inline uint32_t zget_u32(struct zbuf *b)
{
	const uint8_t *x = zget(b, 4);

	return x ? (uint32_t)x[0] << 24 | x[1] << 16 | x[2] << 8 | x[3] : 0;
}

static inline uint64_t zget_u64(struct zbuf *b)
{
	uint64_t hi = zget_u32(b);

	return hi << 32 | zget_u32(b);
}

/* Issues one call; returns 0 (results in reply, *reply_len set) or -errno
 * (transport) / the ION's errno as a negative value. */
static inline int zoid_call(int fd, uint16_t plugin, uint16_t function,
			    const struct zbuf *args, struct zbuf *reply)
{
	struct zoid_ioc_call c = {
		.plugin = plugin, .function = function,
		.args_len = (uint32_t)args->len, .args = (uintptr_t)args->p,
		.reply = (uintptr_t)reply->p, .reply_cap = (uint32_t)reply->cap,
	};

	if (ioctl(fd, ZOID_IOC_CALL, &c) < 0)
		return -errno;
	if (c.error)
		return -c.error;
	reply->len = 0;
	reply->cap = c.reply_len;
	return 0;
}

#endif
