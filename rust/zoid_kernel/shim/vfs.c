// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: file operations under an exported directory, run by
 * ION kernel threads with a CN caller's credentials.
 *
 * The Rust side is rust/zoid_kernel/vfs.rs.  Every path is resolved with the
 * export as its root, as if chrooted there: ".." at the export stays at the
 * export and an absolute symlink resolves inside it (LOOKUP_IN_ROOT, which
 * also makes ".." walks rename-safe, for opens too: zk_open_below).  The
 * Rust side additionally refuses ".." components.
 * Modelled on ksmbd (fs/smb/server/vfs.c).
 */
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/stat.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "zoid_kernel_shim.h"

/* Lookups below the export: chroot-like, rename-safe, no /proc magic links. */
#define ZK_LOOKUP (LOOKUP_IN_ROOT | LOOKUP_NO_MAGICLINKS)

struct zk_export {
	struct path root;
};

/*
 * @dir as the caller sees it; from a kernel thread (which 7.x starts in an
 * empty nullfs root), as userspace init sees it.  Later lookups start at
 * the export's own root, whatever the thread.
 */
struct zk_export *zk_export_open(const char *dir, int *err)
{
	struct zk_export *e = kzalloc(sizeof(*e), GFP_KERNEL);
	struct fs_struct *old_fs = NULL;

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	if (current->flags & PF_KTHREAD)
		old_fs = __override_init_fs();
	*err = kern_path(dir, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &e->root);
	if (old_fs)
		__revert_init_fs(old_fs);
	if (*err) {
		kfree(e);
		return NULL;
	}
	return e;
}

void zk_export_put(struct zk_export *e)
{
	path_put(&e->root);
	kfree(e);
}

const struct cred *zk_creds_make(u32 uid, u32 gid, const u32 *groups,
				 u32 ngroups, int *err)
{
	struct group_info *gi = groups_alloc(ngroups);
	struct cred *c;
	kuid_t kuid = make_kuid(&init_user_ns, uid);
	kgid_t kgid = make_kgid(&init_user_ns, gid);
	u32 i;

	if (!gi) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!uid_valid(kuid) || !gid_valid(kgid)) {
		put_group_info(gi);
		*err = -EINVAL;
		return NULL;
	}
	for (i = 0; i < ngroups; i++) {
		kgid_t g = make_kgid(&init_user_ns, groups[i]);

		/* An unmappable group is nobody's group, never root's. */
		gi->gid[i] = gid_valid(g) ? g : make_kgid(&init_user_ns, 65534);
	}
	groups_sort(gi);
	c = prepare_creds();
	if (!c) {
		put_group_info(gi);
		*err = -ENOMEM;
		return NULL;
	}
	c->uid = c->euid = c->suid = c->fsuid = kuid;
	c->gid = c->egid = c->sgid = c->fsgid = kgid;
	set_groups(c, gi);
	put_group_info(gi);
	/* Only a caller mapped to root keeps the kernel thread's privileges. */
	if (uid != 0) {
		cap_clear(c->cap_effective);
		cap_clear(c->cap_permitted);
		cap_clear(c->cap_inheritable);
		cap_clear(c->cap_ambient);
	}
	*err = 0;
	return c;
}

void zk_creds_put(const struct cred *c)
{
	put_cred(c);
}

const struct cred *zk_creds_enter(const struct cred *c)
{
	return override_creds(c);
}

void zk_creds_leave(const struct cred *old)
{
	revert_creds(old);
}

static struct file *zk_open_below(const struct path *root, const char *path, int flags,
				  u32 mode, int *err);

struct file *zk_file_open(struct zk_export *e, const char *path, int flags,
			  u32 mode, int *err)
{
	return zk_open_below(&e->root, path, flags, mode, err);
}

/*
 * openat(2) relative to the directory `dir`: `dir` is the root of the walk,
 * so the result is at or below it (absolute symlinks met on the way resolve
 * from `dir`).  A `dir` that is not a directory gives ENOTDIR.
 */
struct file *zk_file_open_below(struct file *dir, const char *path, int flags,
				u32 mode, int *err)
{
	if (!d_can_lookup(dir->f_path.dentry)) {
		*err = -ENOTDIR;
		return NULL;
	}
	return zk_open_below(&dir->f_path, path, flags, mode, err);
}

void zk_file_put(struct file *f)
{
	fput(f);
}

ssize_t zk_file_read(struct file *f, void *buf, size_t n, s64 *pos)
{
	loff_t p = pos ? *pos : f->f_pos;
	ssize_t r = kernel_read(f, buf, n, &p);

	if (pos)
		*pos = p;
	else if (r >= 0)
		f->f_pos = p;
	return r;
}

ssize_t zk_file_write(struct file *f, const void *buf, size_t n, s64 *pos)
{
	loff_t p = pos ? *pos : f->f_pos;
	ssize_t r = kernel_write(f, buf, n, &p);

	if (pos)
		*pos = p;
	else if (r >= 0)
		f->f_pos = p;
	return r;
}

s64 zk_file_llseek(struct file *f, s64 off, int whence)
{
	return vfs_llseek(f, off, whence);
}

int zk_file_fsync(struct file *f, int datasync)
{
	return vfs_fsync(f, datasync);
}

/* The file behind descriptor @fd of the calling process, open for reading. */
struct file *zk_file_fget(int fd, int *err)
{
	struct file *f = fd < 0 ? NULL : fget(fd);

	if (!f || !(f->f_mode & FMODE_READ)) {
		if (f)
			fput(f);
		*err = -EBADF;
		return NULL;
	}
	*err = 0;
	return f;
}

/* fchmod(2) as chmod_common() does it (not exported): permission bits only. */
int zk_file_chmod(struct file *f, u32 mode)
{
	struct inode *inode = file_inode(f);
	struct iattr attr = { .ia_valid = ATTR_MODE | ATTR_CTIME };
	int err = mnt_want_write_file(f);

	if (err)
		return err;
	inode_lock(inode);
	attr.ia_mode = (mode & S_IALLUGO) | (inode->i_mode & ~S_IALLUGO);
	err = notify_change(file_mnt_idmap(f), f->f_path.dentry, &attr, NULL);
	inode_unlock(inode);
	mnt_drop_write_file(f);
	return err;
}

int zk_file_truncate(struct file *f, s64 len)
{
	if (!(f->f_mode & FMODE_WRITE))
		return -EBADF;
	return vfs_truncate(&f->f_path, len);
}

static void zk_fill_stat(const struct kstat *k, struct zk_stat *st)
{
	st->dev = new_encode_dev(k->dev);
	st->ino = k->ino;
	st->mode = k->mode;
	st->nlink = k->nlink;
	st->uid = from_kuid_munged(&init_user_ns, k->uid);
	st->gid = from_kgid_munged(&init_user_ns, k->gid);
	st->rdev = new_encode_dev(k->rdev);
	st->size = k->size;
	st->blksize = k->blksize;
	st->blocks = k->blocks;
	st->atime_sec = k->atime.tv_sec;
	st->atime_nsec = k->atime.tv_nsec;
	st->mtime_sec = k->mtime.tv_sec;
	st->mtime_nsec = k->mtime.tv_nsec;
	st->ctime_sec = k->ctime.tv_sec;
	st->ctime_nsec = k->ctime.tv_nsec;
}

int zk_file_getattr(struct file *f, struct zk_stat *st)
{
	struct kstat k;
	int err = vfs_getattr(&f->f_path, &k, STATX_BASIC_STATS, AT_STATX_SYNC_AS_STAT);

	if (!err)
		zk_fill_stat(&k, st);
	return err;
}

int zk_path_stat(struct zk_export *e, const char *path, bool follow,
		 struct zk_stat *st)
{
	struct path p;
	struct kstat k;
	int err = vfs_path_lookup(e->root.dentry, e->root.mnt, path,
				  ZK_LOOKUP | (follow ? LOOKUP_FOLLOW : 0), &p);

	if (err)
		return err;
	err = vfs_getattr(&p, &k, STATX_BASIC_STATS, AT_STATX_SYNC_AS_STAT);
	path_put(&p);
	if (!err)
		zk_fill_stat(&k, st);
	return err;
}

int zk_path_readlink(struct zk_export *e, const char *path, u8 *buf, u32 size)
{
	DEFINE_DELAYED_CALL(done);
	struct path p;
	const char *link;
	int err = vfs_path_lookup(e->root.dentry, e->root.mnt, path, ZK_LOOKUP, &p);
	size_t len;

	if (err)
		return err;
	if (!d_is_symlink(p.dentry)) {
		path_put(&p);
		return -EINVAL;
	}
	link = vfs_get_link(p.dentry, &done);
	if (IS_ERR(link)) {
		path_put(&p);
		return PTR_ERR(link);
	}
	len = min_t(size_t, strlen(link), size);
	memcpy(buf, link, len);
	do_delayed_call(&done);
	path_put(&p);
	return len;
}

/*
 * The parent of @path and its last component.  @last points into *@name,
 * which the caller releases with putname() after its last use of @last
 * (on success only).
 */
static int zk_parent_below(const struct path *root, const char *path, struct path *parent,
			   struct qstr *last, struct filename **name)
{
	int err;

	*name = getname_kernel(path);
	if (IS_ERR(*name))
		return PTR_ERR(*name);
	err = vfs_path_parent_lookup(*name, ZK_LOOKUP, parent, last, root);
	if (err)
		putname(*name);
	return err;
}

static int zk_parent(struct zk_export *e, const char *path, struct path *parent,
		     struct qstr *last, struct filename **name)
{
	return zk_parent_below(&e->root, path, parent, last, name);
}

/* What zk_make_at makes (the zoidfs shim's kinds too). */
enum {
	ZK_MAKE_FILE = 0, ZK_MAKE_FILE_EXCL = 1, ZK_MAKE_DIR = 2, ZK_MAKE_SYMLINK = 3,
	ZK_MAKE_NODE = 4,
};

/*
 * Makes @last in directory @dir: a regular file (ZK_MAKE_FILE returns an
 * existing regular file as it is), a directory, a symlink to @target or
 * a special file (ZK_MAKE_NODE: @mode carries the type, @rdev a device's
 * number, new_encode_dev() encoded).
 * With @out, a reference to the new dentry on success.  Shared by the
 * path-based (unix) and handle-based (zoidfs) entry points.
 */
static int zk_make_at(const struct path *dir, struct qstr *last, u32 mode, int kind,
		      const char *target, u32 rdev, struct dentry **out)
{
	struct mnt_idmap *idmap = mnt_idmap(dir->mnt);
	struct dentry *d;
	int err = mnt_want_write(dir->mnt);

	if (err)
		return err;
	d = start_creating(idmap, dir->dentry, last);
	if (IS_ERR(d)) {
		err = PTR_ERR(d);
		goto drop;
	}
	if (d_is_positive(d)) {
		/* An existing regular file is the result of a non-exclusive create. */
		err = (kind == ZK_MAKE_FILE && d_is_reg(d)) ? 0 : -EEXIST;
	} else if (kind == ZK_MAKE_FILE || kind == ZK_MAKE_FILE_EXCL) {
		err = vfs_create(idmap, d, (mode & 07777) | S_IFREG, NULL);
	} else if (kind == ZK_MAKE_SYMLINK) {
		err = vfs_symlink(idmap, d_inode(dir->dentry), d, target, NULL);
	} else if (kind == ZK_MAKE_NODE) {
		switch (mode & S_IFMT) {
		case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
			err = vfs_mknod(idmap, d_inode(dir->dentry), d, mode & (S_IFMT | 07777),
					new_decode_dev(rdev), NULL);
			break;
		default:
			err = -EINVAL;
		}
	} else {
		/* On error vfs_mkdir() ends the dirop itself and returns an
		 * ERR_PTR, which end_creating() below ignores. */
		d = vfs_mkdir(idmap, d_inode(dir->dentry), d, (mode & 07777) | S_IFDIR, NULL);
		err = IS_ERR(d) ? PTR_ERR(d) : 0;
	}
	if (!err && out) {
		if (d_is_positive(d))
			*out = dget(d);
		else
			err = -ENOENT;	/* created but not instantiated: ask again */
	}
	end_creating(d);
drop:
	mnt_drop_write(dir->mnt);
	return err;
}

/*
 * Creates the regular file @path below @root, exclusively: 0 with *@made
 * set to the new file, or an error (EEXIST when something has the name).
 */
static int zk_create_file_below(const struct path *root, const char *path, u32 mode,
				struct path *made)
{
	struct path parent;
	struct qstr last;
	struct filename *name;
	struct dentry *d = NULL;
	int err = zk_parent_below(root, path, &parent, &last, &name);

	if (err)
		return err;
	err = zk_make_at(&parent, &last, mode, ZK_MAKE_FILE_EXCL, NULL, 0, &d);
	if (!err) {
		made->mnt = mntget(parent.mnt);
		made->dentry = d;
	}
	path_put(&parent);
	putname(name);
	return err;
}

/* Flags of open(2) that only the open itself acts on. */
#define ZK_OPEN_ONLY (O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC)

/*
 * open(2) of @path below @root for a CN's call (and the ION's own opens of
 * its files), as openat2(2) with RESOLVE_IN_ROOT: the walk never leaves
 * @root, even while renames move directories ("..", absolute symlinks and
 * magic links included).  Only regular files and directories are opened:
 * a FIFO, socket or device node gives ENXIO, so a CN can neither hold a
 * worker in a FIFO's open nor reach a device through the export.  The
 * permission checks are may_open()'s, with the caller's credentials (the
 * Rust side installed them): read and write permission, a directory never
 * for writing, an append-only file only with O_APPEND and never
 * truncated, O_NOATIME only for the owner.  A file this open created is
 * not checked again (its mode may deny what its creator asked, as
 * open(2) allows).  O_TMPFILE is not supported (EOPNOTSUPP).
 */
static struct file *zk_open_below(const struct path *root, const char *path, int flags,
				  u32 mode, int *err)
{
	unsigned int lookup = ZK_LOOKUP;
	struct path p;
	struct inode *inode;
	struct file *f;
	bool created = false;
	int acc = 0;

	if ((flags & __O_TMPFILE) == __O_TMPFILE) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	if ((flags & O_ACCMODE) == O_ACCMODE) {
		*err = -EINVAL;
		return NULL;
	}
	if (flags & O_PATH)
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if (!(flags & O_NOFOLLOW))
		lookup |= LOOKUP_FOLLOW;
	if (flags & O_DIRECTORY)
		lookup |= LOOKUP_DIRECTORY;
	*err = -ENOENT;
	if (flags & O_CREAT) {
		*err = zk_create_file_below(root, path, mode, &p);
		if (!*err)
			created = true;
		else if (*err != -EEXIST || (flags & O_EXCL))
			return NULL;
	}
	if (!created) {
		*err = vfs_path_lookup(root->dentry, root->mnt, path, lookup, &p);
		if (*err)
			return NULL;
	}
	inode = d_inode(p.dentry);
	if (flags & O_PATH)
		goto open;
	if (d_is_symlink(p.dentry))
		*err = -ELOOP;		/* O_NOFOLLOW */
	else if (S_ISDIR(inode->i_mode))
		*err = ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT))) ?
			-EISDIR : 0;
	else if (!S_ISREG(inode->i_mode))
		*err = -ENXIO;
	else if ((flags & O_DIRECTORY))
		*err = -ENOTDIR;
	if (*err)
		goto out;
	if ((flags & O_ACCMODE) != O_WRONLY)
		acc |= MAY_READ;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		acc |= MAY_WRITE;
	if (flags & O_APPEND)
		acc |= MAY_APPEND;
	if (IS_APPEND(inode) && (acc & MAY_WRITE) &&
	    (!(flags & O_APPEND) || (flags & O_TRUNC))) {
		*err = -EPERM;
		goto out;
	}
	if ((flags & O_NOATIME) && !inode_owner_or_capable(mnt_idmap(p.mnt), inode)) {
		*err = -EPERM;
		goto out;
	}
	if (!created) {
		*err = inode_permission(mnt_idmap(p.mnt), inode, MAY_OPEN | acc);
		if (*err)
			goto out;
	}
open:
	f = dentry_open(&p, (flags & ~ZK_OPEN_ONLY) | O_LARGEFILE, current_cred());
	if (IS_ERR(f)) {
		*err = PTR_ERR(f);
		goto out;
	}
	if ((flags & O_TRUNC) && !created && S_ISREG(inode->i_mode) && !(flags & O_PATH)) {
		*err = vfs_truncate(&p, 0);
		if (*err) {
			fput(f);
			goto out;
		}
	}
	path_put(&p);
	*err = 0;
	return f;
out:
	path_put(&p);
	return NULL;
}

/* mkdir (@target NULL) or symlink to @target, at @path. */
static int zk_create(struct zk_export *e, const char *path, u32 mode,
		     const char *target)
{
	struct path parent;
	struct qstr last;
	struct filename *name;
	int err = zk_parent(e, path, &parent, &last, &name);

	if (err)
		return err;
	err = zk_make_at(&parent, &last, mode, target ? ZK_MAKE_SYMLINK : ZK_MAKE_DIR,
			 target, 0, NULL);
	path_put(&parent);
	putname(name);
	return err;
}

int zk_path_mkdir(struct zk_export *e, const char *path, u32 mode)
{
	return zk_create(e, path, mode, NULL);
}

int zk_path_symlink(struct zk_export *e, const char *target, const char *path)
{
	return zk_create(e, path, 0, target);
}

/* rmdir (@is_dir) or unlink of @last in directory @dir. */
static int zk_remove_at(const struct path *dir, struct qstr *last, bool is_dir)
{
	struct mnt_idmap *idmap = mnt_idmap(dir->mnt);
	struct dentry *d;
	int err = mnt_want_write(dir->mnt);

	if (err)
		return err;
	d = start_removing(idmap, dir->dentry, last);
	if (IS_ERR(d)) {
		err = PTR_ERR(d);
	} else {
		if (is_dir)
			err = vfs_rmdir(idmap, d_inode(dir->dentry), d, NULL);
		else if (d_is_dir(d))
			err = -EISDIR;
		else
			err = vfs_unlink(idmap, d_inode(dir->dentry), d, NULL);
		end_removing(d);
	}
	mnt_drop_write(dir->mnt);
	return err;
}

/* rmdir (@dir) or unlink. */
int zk_path_remove(struct zk_export *e, const char *path, bool dir)
{
	struct path parent;
	struct qstr last;
	struct filename *name;
	int err = zk_parent(e, path, &parent, &last, &name);

	if (err)
		return err;
	err = zk_remove_at(&parent, &last, dir);
	path_put(&parent);
	putname(name);
	return err;
}

/* Renames @old_last in @old_dir to @new_last in @new_dir (renameat2 @flags). */
static int zk_rename_at(const struct path *old_dir, struct qstr *old_last,
			const struct path *new_dir, struct qstr *new_last, u32 flags)
{
	struct renamedata rd = {};
	int err;

	if (old_dir->mnt != new_dir->mnt)
		return -EXDEV;
	err = mnt_want_write(old_dir->mnt);
	if (err)
		return err;
	rd.mnt_idmap = mnt_idmap(old_dir->mnt);
	rd.old_parent = old_dir->dentry;
	rd.new_parent = new_dir->dentry;
	rd.flags = flags;
	err = start_renaming(&rd, 0, old_last, new_last);
	if (!err) {
		err = vfs_rename(&rd);
		end_renaming(&rd);
	}
	mnt_drop_write(old_dir->mnt);
	return err;
}

int zk_path_rename(struct zk_export *e, const char *from, const char *to)
{
	struct path old_parent, new_parent;
	struct qstr old_last, new_last;
	struct filename *old_name, *new_name;
	int err = zk_parent(e, from, &old_parent, &old_last, &old_name);

	if (err)
		return err;
	err = zk_parent(e, to, &new_parent, &new_last, &new_name);
	if (!err) {
		err = zk_rename_at(&old_parent, &old_last, &new_parent, &new_last, 0);
		path_put(&new_parent);
		putname(new_name);
	}
	path_put(&old_parent);
	putname(old_name);
	return err;
}

/* getdents: records in zoid's wire format (rust/zoid_proto's unix Dirent:
 * be64 ino, be64 next offset, u8 type, be16 name length, name). */
struct zk_dirents {
	struct dir_context ctx;
	u8 *buf;
	u32 size, used;
	u8 *prev;	/* the previous record: its offset is this entry's */
	bool full;
};

static bool zk_filldir(struct dir_context *ctx, const char *name, int namlen,
		       loff_t offset, u64 ino, unsigned int d_type)
{
	struct zk_dirents *d = container_of(ctx, struct zk_dirents, ctx);
	u32 len = 19 + namlen;
	u8 *p = d->buf + d->used;
	__be64 v64;
	__be16 v16;

	/* Once an entry did not fit, take no more, even from a filesystem
	 * that goes on after the false: a later one would resume the
	 * listing past the one left out.
	 */
	if (d->full)
		return false;
	if (namlen <= 0 || namlen > 255 || d->used + len > d->size) {
		d->full = true;
		return false;
	}
	v64 = cpu_to_be64(ino);
	memcpy(p, &v64, 8);
	/* As getdents64: a record's offset resumes after it, which is the
	 * position of the next entry (the last one gets ctx->pos). */
	if (d->prev) {
		v64 = cpu_to_be64(offset);
		memcpy(d->prev + 8, &v64, 8);
	}
	memset(p + 8, 0, 8);
	d->prev = p;
	p[16] = d_type;
	v16 = cpu_to_be16(namlen);
	memcpy(p + 17, &v16, 2);
	memcpy(p + 19, name, namlen);
	d->used += len;
	return true;
}

int zk_file_getdents(struct file *f, u8 *buf, u32 size, u32 *used)
{
	struct zk_dirents d = {
		.ctx.actor = zk_filldir,
		.ctx.count = size,
		.buf = buf,
		.size = size,
	};
	int err = iterate_dir(f, &d.ctx);
	__be64 v64;

	if (d.prev) {
		v64 = cpu_to_be64(d.ctx.pos);
		memcpy(d.prev + 8, &v64, 8);
	}
	*used = d.used;
	if (err)
		return err;
	if (d.full && d.used == 0)
		return -EINVAL;
	return 0;
}
