/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zoidfs: the boundary between the C VFS glue (zoidfs_vfs.c: superblock,
 * inodes, dentries, files, page cache) and the Rust remote operations
 * (remote.rs: each VFS operation as one zoidfs plug-in call to the ION).
 * The Rust mirror of these types is in remote.rs; keep them in step.
 *
 * Every zoidfs_rs_* function runs in process context with the calling
 * task's credentials (they travel with the call), may sleep, and returns
 * 0 (or a byte count) or a negative errno.
 */
#ifndef ZOIDFS_H
#define ZOIDFS_H

#include <linux/types.h>

#define ZOIDFS_MAX_HANDLE 64
#define ZOIDFS_MAGIC 0x7a6f6964	/* "zoid" */
#define ZOIDFS_PLUGIN 4		/* the zoidfs plug-in's id on zoid */

/* An ION object handle (opaque, 1..ZOIDFS_MAX_HANDLE bytes). */
struct zoidfs_fh {
	u8 len;
	u8 data[ZOIDFS_MAX_HANDLE];
};

/* Attributes as the ION reports them (ids in the ION's numbering). */
struct zoidfs_attr {
	u64 ino;
	u64 rdev;
	u64 blocks;
	s64 size;
	s64 atime_sec;
	s64 mtime_sec;
	s64 ctime_sec;
	u32 atime_nsec;
	u32 mtime_nsec;
	u32 ctime_nsec;
	u32 mode;
	u32 nlink;
	u32 uid;
	u32 gid;
	u32 blksize;
	u32 acl;	/* ZOIDFS_HAS_ACL, ZOIDFS_HAS_DEFAULT_ACL */
};

/* What the ION says of an object's POSIX ACLs (zoidfs::MODE_HAS_*ACL). */
#define ZOIDFS_HAS_ACL		(1u << 16)
#define ZOIDFS_HAS_DEFAULT_ACL	(1u << 17)

/* Attribute changes: `valid` holds ZOIDFS_SET_* bits. */
#define ZOIDFS_SET_MODE		(1 << 0)
#define ZOIDFS_SET_UID		(1 << 1)
#define ZOIDFS_SET_GID		(1 << 2)
#define ZOIDFS_SET_SIZE		(1 << 3)
#define ZOIDFS_SET_ATIME	(1 << 4)
#define ZOIDFS_SET_MTIME	(1 << 5)
#define ZOIDFS_SET_ATIME_NOW	(1 << 6)
#define ZOIDFS_SET_MTIME_NOW	(1 << 7)

struct zoidfs_setattr {
	s64 size;
	s64 atime_sec;
	s64 mtime_sec;
	u32 atime_nsec;
	u32 mtime_nsec;
	u32 valid;
	u32 mode;
	u32 uid;
	u32 gid;
};

struct zoidfs_statfs {
	u64 blocks;
	u64 bfree;
	u64 bavail;
	u64 files;
	u64 ffree;
	u32 bsize;
	u32 frsize;
	u32 namelen;
};

/* How one mount talks to its ION. */
struct zoidfs_conn {
	u32 timeout_ms;		/* per call, 0: zoid's knob */
	int mode;		/* enum zoid_call_mode */
	atomic_t abort;		/* umount -f: calls give up with -EIO */
};

/* readdir's callback: false when the caller's buffer is full. */
typedef bool (*zoidfs_emit_fn)(void *ctx, const char *name, size_t len, u64 ino,
			       unsigned int type, s64 next);

/* Write at the end of the file (O_APPEND), wherever it is on the ION. */
#define ZOIDFS_APPEND (-1LL)

/* Implemented in Rust (remote.rs). */
int zoidfs_rs_connect(u32 *ion, u32 *max_request, u32 *max_reply);
int zoidfs_rs_root(const struct zoidfs_conn *c, const char *export, size_t export_len,
		   struct zoidfs_fh *fh, struct zoidfs_attr *attr);
int zoidfs_rs_lookup(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		     const char *name, size_t len, struct zoidfs_fh *fh,
		     struct zoidfs_attr *attr);
int zoidfs_rs_getattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		      struct zoidfs_attr *attr);
int zoidfs_rs_setattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		      const struct zoidfs_setattr *set, struct zoidfs_attr *attr);
int zoidfs_rs_create(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		     const char *name, size_t len, u32 mode, bool excl,
		     struct zoidfs_fh *fh, struct zoidfs_attr *attr);
int zoidfs_rs_mkdir(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		    const char *name, size_t len, u32 mode, struct zoidfs_fh *fh,
		    struct zoidfs_attr *attr);
int zoidfs_rs_symlink(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		      const char *name, size_t len, const char *target, size_t target_len,
		      struct zoidfs_fh *fh, struct zoidfs_attr *attr);
int zoidfs_rs_link(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		   const struct zoidfs_fh *dir, const char *name, size_t len,
		   struct zoidfs_attr *attr);
int zoidfs_rs_remove(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		     const char *name, size_t len, bool is_dir);
int zoidfs_rs_rename(const struct zoidfs_conn *c, const struct zoidfs_fh *from_dir,
		     const char *from, size_t from_len, const struct zoidfs_fh *to_dir,
		     const char *to, size_t to_len, u32 flags);
int zoidfs_rs_mknod(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
		    const char *name, size_t len, u32 mode, u32 rdev, struct zoidfs_fh *fh,
		    struct zoidfs_attr *attr);
/* Extended attributes (user.* and trusted.*): as the syscalls, size 0 asks
 * for a length only. */
ssize_t zoidfs_rs_getxattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			   const char *name, size_t name_len, void *buf, size_t size);
int zoidfs_rs_setxattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		       const char *name, size_t name_len, const void *value, size_t size,
		       u32 flags);
ssize_t zoidfs_rs_listxattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			    void *buf, size_t size);
int zoidfs_rs_removexattr(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			  const char *name, size_t name_len);
ssize_t zoidfs_rs_readlink(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			   char *buf, size_t cap);
ssize_t zoidfs_rs_readdir(const struct zoidfs_conn *c, const struct zoidfs_fh *dir,
			  s64 cookie, u32 cap, zoidfs_emit_fn emit, void *ctx);
ssize_t zoidfs_rs_read(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		       s64 offset, void *buf, size_t count);
ssize_t zoidfs_rs_write(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			s64 offset, const void *buf, size_t count, bool sync,
			struct zoidfs_attr *attr, u64 *verf);

/*
 * Reads and writes in flight: *_start sends the call and returns at once
 * (0 with *io set, or a negative errno), *_finish waits for it, frees `io`
 * and returns as zoidfs_rs_read/write.  Every started `io` is finished
 * exactly once.  A read's `buf`
 * stays untouched by the caller until its finish; a write's `buf` is
 * copied before its start returns.
 */
struct zoidfs_io;
int zoidfs_rs_read_start(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			 s64 offset, void *buf, size_t count, struct zoidfs_io **io);
ssize_t zoidfs_rs_read_finish(struct zoidfs_io *io);
int zoidfs_rs_write_start(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
			  s64 offset, const void *buf, size_t count, bool sync,
			  struct zoidfs_io **io);
ssize_t zoidfs_rs_write_finish(struct zoidfs_io *io, struct zoidfs_attr *attr, u64 *verf);

/*
 * Writes answer, and commit (fsync) answers, with the ION's write verifier
 * (*verf): another value means another ION boot, whose page cache lost the
 * unsynced writes of the one before (fs/zoidfs/zoidfs_vfs.c sends them
 * again).
 */
int zoidfs_rs_commit(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		     bool datasync, u64 *verf);
int zoidfs_rs_statfs(const struct zoidfs_conn *c, const struct zoidfs_fh *fh,
		     struct zoidfs_statfs *st);

/*
 * consistency=relaxed: the first open on this CN (*grant > 0: the CN may
 * cache the file until recalled), the last close, the answer to a recall,
 * and the decoding of a recall upcall (0 or -EPROTO).
 */
int zoidfs_rs_open(const struct zoidfs_conn *c, const struct zoidfs_fh *fh, u64 ino,
		   u32 *grant);
int zoidfs_rs_close(const struct zoidfs_conn *c, const struct zoidfs_fh *fh);
int zoidfs_rs_recalled(const struct zoidfs_conn *c, const struct zoidfs_fh *fh, u32 grant);
int zoidfs_rs_parse_recall(u16 function, const void *body, size_t len, struct zoidfs_fh *fh,
			   u64 *ino, u32 *grant);

/* consistency=ssi: counts what ssi's callbacks and the size object did. */
void zoidfs_rs_ssi_count(int event);
/* Counts an umount -f. */
void zoidfs_rs_count_forced_umount(void);
/* Counts unsynced writes an ION reboot lost: sent again, or (lost) not. */
void zoidfs_rs_count_unstable(bool lost);
/*
 * consistency=relaxed: counts a grant found void and dropped (dirty: with
 * data cached under it, dropped too), and data a write-back dropped.
 */
void zoidfs_rs_count_grant_void(bool dirty);
void zoidfs_rs_count_void_data(void);
/* Counts a read or write call whose folios were mapped together (vmap). */
void zoidfs_rs_count_run_mapping(void);
/* Counts a stale handle looked up again by its name: made good (ok), or not. */
void zoidfs_rs_count_reconnect(bool ok);

/* Implemented in C (zoidfs_vfs.c), called from the module's init/exit. */
int zoidfs_register(void);
void zoidfs_unregister(void);

#endif
