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

/*
 * Jobs launched by the ION on its CNs (on an ION): ZOID_IOC_JOB_RUN starts
 * one and returns the job's descriptor, whose read() yields the ranks'
 * output and ends as events (struct zoid_job_event), whose write() feeds
 * the ranks' stdin.  tools/zoid/zoid-job.c is the command-line tool.
 *
 * The spec block (`spec`, `spec_len`): uint32_t argc, uint32_t envc, then
 * the working directory NUL-terminated (empty: the default), argc
 * NUL-terminated strings (argv; argv[0] absolute or looked up in the PATH
 * of the env given), envc NUL-terminated "K=V" strings, nothing after.
 * Rank numbering: CN i of the list runs ranks i*local_size ..
 * i*local_size+local_size-1; ZOID_JOB_RANK, ZOID_JOB_ID,
 * ZOID_JOB_GLOBAL_SIZE and ZOID_JOB_LOCAL_SIZE are set in every rank's
 * environment by the kernel.
 */
#define ZOID_JOB_STDIN_ALL 0x1		/* stdin to every rank, not rank 0 only */
#define ZOID_JOB_MAX_LOCAL 64		/* processes per CN */
#define ZOID_JOB_MAX_SPEC 65536		/* bytes of the spec block */
#define ZOID_JOB_ID_DEFAULT 0xffffffffu	/* uid/gid: the caller's */

struct zoid_job_run {		/* 64 bytes, in/out */
	uint64_t spec;		/* in: the spec block */
	uint64_t cns;		/* in: uint16_t node ids[ncns] */
	uint32_t spec_len;	/* in: the spec block's length */
	uint32_t ncns;		/* in: CNs in cns; 0: every attached CN, by node id */
	uint32_t flags;		/* in: ZOID_JOB_* */
	uint32_t uid;		/* in: the owner's uid; ZOID_JOB_ID_DEFAULT: the caller's */
	uint32_t gid;		/* in: the owner's gid; ZOID_JOB_ID_DEFAULT: the caller's */
	uint32_t local_size;	/* in: processes per CN, 1..ZOID_JOB_MAX_LOCAL (0 = 1) */
	uint32_t job_id;	/* out: the job's id (its ranks' ZOID_JOB_ID) */
	uint32_t global_size;	/* out: ranks in all */
	int32_t fd;		/* out: the job's descriptor (O_CLOEXEC) */
	uint32_t reserved[3];	/* 0 */
};

/* ZOID_IOC_JOB_KILL (on /dev/zoid): the job's owner or CAP_KILL; ESRCH
 * for an unknown id. */
struct zoid_job_kill {
	uint32_t job_id;
	uint32_t sig;
};

/* read() on a job's descriptor: whole events, each this header and, for
 * OUTPUT, `len` bytes of data (cut to fit the reader's buffer, which must
 * hold at least 16 bytes: the rest follows as another OUTPUT event). */
struct zoid_job_event {		/* 16 bytes, then len bytes of data */
	uint32_t rank;		/* 0xffffffff for END */
	uint16_t type;		/* ZOID_JOB_EV_* */
	uint16_t stream;	/* OUTPUT: ZOID_JOB_STDOUT or ZOID_JOB_STDERR */
	uint32_t len;		/* OUTPUT: bytes of data that follow */
	int32_t value;		/* EXIT: wait status; FAILED: errno; END: exit code */
};
#define ZOID_JOB_EV_OUTPUT 1	/* output of rank `rank` */
#define ZOID_JOB_EV_EXIT 2	/* the rank ended: value = its wait status */
#define ZOID_JOB_EV_FAILED 3	/* the rank ended without a status: value = errno
				 * (ENOENT etc.: did not start; EHOSTDOWN: its CN
				 * went down; ECONNRESET: its CN lost it) */
#define ZOID_JOB_EV_END 4	/* every rank ended: value = the job's exit code
				 * (the first rank to end badly: its exit code,
				 * 128+signal, 127 (did not start) or 255 (CN lost);
				 * else 0) */
#define ZOID_JOB_STDOUT 1
#define ZOID_JOB_STDERR 2
#define ZOID_JOB_RANK_NONE 0xffffffffu

_Static_assert(sizeof(struct zoid_job_run) == 64, "struct zoid_job_run is 64 bytes");
_Static_assert(sizeof(struct zoid_job_kill) == 8, "struct zoid_job_kill is 8 bytes");
_Static_assert(sizeof(struct zoid_job_event) == 16, "struct zoid_job_event is 16 bytes");

#define ZOID_IOC_JOB_RUN _IOWR('Z', 4, char[64])	/* struct zoid_job_run */
#define ZOID_IOC_JOB_KILL _IOW('Z', 5, char[8])	/* struct zoid_job_kill */
/* On a job's descriptor: */
#define ZOID_JOB_IOC_SIGNAL _IOW('Z', 6, uint32_t)	/* the signal (1..64) to every running rank */
#define ZOID_JOB_IOC_EOF _IO('Z', 7)		/* stdin ends after what was written */

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
