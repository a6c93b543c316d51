// SPDX-License-Identifier: GPL-2.0
/*
 * zoidfs VFS glue: `mount -t zoidfs` on a CN.  The superblock, inode,
 * dentry, file and address-space operations live here (7.3 has no Rust
 * abstraction for them) and reduce every operation to one call of the
 * Rust side (zoidfs.h, remote.rs), which forwards it to the ION.
 *
 * Caching (cache=none, the only mode so far): nothing is trusted between
 * calls.  Dentries are revalidated by a lookup at every walk, attributes
 * are fetched at every stat, reads and writes go straight to the ION
 * (the page cache holds only what mmap reads, and writes drop it), so
 * every CN sees every other CN's completed operations (serial
 * consistency).  Modelled on fs/9p's cache=none mode and fs/ramfs.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/uio.h>
#include <linux/writeback.h>
#include "zoidfs.h"
#include "../../drivers/zoid/zoid_client.h"

/* Bytes of call header, groups and fixed arguments a data call may need. */
#define ZOIDFS_CALL_OVERHEAD 1024
/* Largest transfer per call, whatever the ION allows. */
#define ZOIDFS_MAX_IO (1U << 20)
/* readdir: bytes of entries asked for per call. */
#define ZOIDFS_READDIR_BYTES 16384
/* readdir positions 0 and 1 are "." and ".."; 2 starts the ION's list. */
#define ZOIDFS_DIR_START 2

struct zoidfs_sb {
	struct zoidfs_conn conn;
	struct zoidfs_fh root;
	u32 ion;
	u32 rsize;
	u32 wsize;
	u32 timeo;		/* mount option, tenths of a second */
	u32 retrans;
	bool hard;
	char *export;
};

struct zoidfs_inode {
	struct zoidfs_fh fh;
	struct inode vfs_inode;
};

static struct kmem_cache *zoidfs_inode_cache;

static inline struct zoidfs_inode *ZI(struct inode *inode)
{
	return container_of(inode, struct zoidfs_inode, vfs_inode);
}

static inline struct zoidfs_sb *ZSB(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline const struct zoidfs_conn *zconn(struct inode *inode)
{
	return &ZSB(inode->i_sb)->conn;
}

static const struct inode_operations zoidfs_dir_iops;
static const struct inode_operations zoidfs_file_iops;
static const struct inode_operations zoidfs_symlink_iops;
static const struct file_operations zoidfs_dir_fops;
static const struct file_operations zoidfs_file_fops;
static const struct address_space_operations zoidfs_aops;
static const struct dentry_operations zoidfs_dentry_ops;

/* ---- Inodes ---- */

/* Brings `inode` up to the ION's attributes. */
static void zoidfs_apply_attr(struct inode *inode, const struct zoidfs_attr *a)
{
	struct timespec64 mtime = inode_get_mtime(inode);
	bool changed = S_ISREG(inode->i_mode) &&
		(mtime.tv_sec != a->mtime_sec || mtime.tv_nsec != a->mtime_nsec ||
		 i_size_read(inode) != a->size);

	inode->i_mode = (inode->i_mode & S_IFMT) | (a->mode & ~S_IFMT);
	set_nlink(inode, a->nlink);
	inode->i_uid = make_kuid(&init_user_ns, a->uid);
	inode->i_gid = make_kgid(&init_user_ns, a->gid);
	i_size_write(inode, a->size);
	inode->i_blocks = a->blocks;
	inode_set_atime(inode, a->atime_sec, a->atime_nsec);
	inode_set_mtime(inode, a->mtime_sec, a->mtime_nsec);
	inode_set_ctime(inode, a->ctime_sec, a->ctime_nsec);
	/* Someone changed the file: what mmap cached is stale. */
	if (changed && inode->i_mapping->nrpages)
		invalidate_mapping_pages(inode->i_mapping, 0, -1);
}

static int zoidfs_test(struct inode *inode, void *data)
{
	const struct zoidfs_fh *fh = data;
	const struct zoidfs_fh *mine = &ZI(inode)->fh;

	return mine->len == fh->len && !memcmp(mine->data, fh->data, fh->len);
}

static int zoidfs_set(struct inode *inode, void *data)
{
	ZI(inode)->fh = *(const struct zoidfs_fh *)data;
	return 0;
}

/* The inode of `fh` (new or cached), with attributes `a`. */
static struct inode *zoidfs_iget(struct super_block *sb, struct zoidfs_fh *fh,
				 const struct zoidfs_attr *a)
{
	struct inode *inode;

	if (!fh->len || fh->len > ZOIDFS_MAX_HANDLE)
		return ERR_PTR(-EIO);
	inode = iget5_locked(sb, a->ino, zoidfs_test, zoidfs_set, fh);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode_state_read_once(inode) & I_NEW)) {
		if ((inode->i_mode & S_IFMT) != (a->mode & S_IFMT)) {
			/* The same handle with another type: not ours. */
			iput(inode);
			return ERR_PTR(-ESTALE);
		}
		zoidfs_apply_attr(inode, a);
		return inode;
	}
	inode->i_ino = a->ino;
	inode->i_mode = a->mode;
	inode->i_blkbits = sb->s_blocksize_bits;
	switch (a->mode & S_IFMT) {
	case S_IFDIR:
		inode->i_op = &zoidfs_dir_iops;
		inode->i_fop = &zoidfs_dir_fops;
		break;
	case S_IFREG:
		inode->i_op = &zoidfs_file_iops;
		inode->i_fop = &zoidfs_file_fops;
		inode->i_mapping->a_ops = &zoidfs_aops;
		break;
	case S_IFLNK:
		inode->i_op = &zoidfs_symlink_iops;
		break;
	default:
		inode->i_op = &zoidfs_file_iops;
		init_special_inode(inode, a->mode, new_decode_dev(a->rdev));
		break;
	}
	zoidfs_apply_attr(inode, a);
	unlock_new_inode(inode);
	return inode;
}

static struct inode *zoidfs_alloc_inode(struct super_block *sb)
{
	struct zoidfs_inode *zi = alloc_inode_sb(sb, zoidfs_inode_cache, GFP_KERNEL);

	if (!zi)
		return NULL;
	zi->fh.len = 0;
	return &zi->vfs_inode;
}

static void zoidfs_free_inode(struct inode *inode)
{
	kmem_cache_free(zoidfs_inode_cache, ZI(inode));
}

static void zoidfs_inode_init_once(void *p)
{
	struct zoidfs_inode *zi = p;

	inode_init_once(&zi->vfs_inode);
}

/* ---- Names ---- */

/* Looks `dentry` up in `dir` on the ION: its inode, NULL if there is none. */
static struct inode *zoidfs_lookup_inode(struct inode *dir, const struct qstr *name)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_lookup(zconn(dir), &ZI(dir)->fh, name->name, name->len, &fh, &a);
	if (err == -ENOENT)
		return NULL;
	if (err)
		return ERR_PTR(err);
	return zoidfs_iget(dir->i_sb, &fh, &a);
}

static struct dentry *zoidfs_lookup(struct inode *dir, struct dentry *dentry,
				    unsigned int flags)
{
	struct inode *inode;

	if (dentry->d_name.len > NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	inode = zoidfs_lookup_inode(dir, &dentry->d_name);
	if (IS_ERR(inode))
		return ERR_CAST(inode);
	return d_splice_alias(inode, dentry);
}

/*
 * cache=none: a dentry holds until the next walk, which asks the ION
 * again.  Negative dentries are never trusted.
 */
static int zoidfs_d_revalidate(struct inode *dir, const struct qstr *name,
			       struct dentry *dentry, unsigned int flags)
{
	struct inode *inode, *found;

	if (flags & LOOKUP_RCU)
		return -ECHILD;
	inode = d_inode(dentry);
	if (!inode)
		return 0;
	found = zoidfs_lookup_inode(dir, name);
	if (IS_ERR(found))
		return PTR_ERR(found) == -ESTALE ? 0 : PTR_ERR(found);
	if (!found)
		return 0;
	iput(found);
	/* Same handle, same inode (iget5 found it); otherwise replaced. */
	return found == inode;
}

static const struct dentry_operations zoidfs_dentry_ops = {
	.d_revalidate = zoidfs_d_revalidate,
};

/* Gives `dentry` the inode of a just-made object. */
static int zoidfs_instantiate(struct inode *dir, struct dentry *dentry,
			      struct zoidfs_fh *fh, const struct zoidfs_attr *a)
{
	struct inode *inode = zoidfs_iget(dir->i_sb, fh, a);

	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	return 0;
}

/* The directory changed: its attributes (nlink, times) on the next stat. */
static void zoidfs_dir_changed(struct inode *dir)
{
	struct zoidfs_attr a;

	if (!zoidfs_rs_getattr(zconn(dir), &ZI(dir)->fh, &a))
		zoidfs_apply_attr(dir, &a);
}

static int zoidfs_do_create(struct inode *dir, struct dentry *dentry, umode_t mode,
			    bool excl)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_create(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			       dentry->d_name.len, mode & 07777, excl, &fh, &a);
	if (err)
		return err;
	return zoidfs_instantiate(dir, dentry, &fh, &a);
}

static int zoidfs_create(struct mnt_idmap *idmap, struct inode *dir,
			 struct dentry *dentry, umode_t mode)
{
	return zoidfs_do_create(dir, dentry, mode, true);
}

/*
 * open(O_CREAT) in one step: O_EXCL is decided by the ION (exclusive
 * across CNs); a file another CN created since our lookup is opened as
 * it is (and truncated by the VFS for O_TRUNC).
 */
static int zoidfs_atomic_open(struct inode *dir, struct dentry *dentry,
			      struct file *file, unsigned int flags, umode_t mode)
{
	struct inode *inode;
	int err;

	if (d_in_lookup(dentry)) {
		struct dentry *res = zoidfs_lookup(dir, dentry, 0);

		if (IS_ERR(res))
			return PTR_ERR(res);
		if (res || d_really_is_positive(dentry))
			return finish_no_open(file, res);
	}
	if (!(flags & O_CREAT))
		return finish_no_open(file, NULL);
	err = zoidfs_do_create(dir, dentry, mode, true);
	if (err == -EEXIST && !(flags & O_EXCL)) {
		inode = zoidfs_lookup_inode(dir, &dentry->d_name);
		if (IS_ERR_OR_NULL(inode))
			return inode ? PTR_ERR(inode) : -ENOENT;
		d_instantiate(dentry, inode);
		return finish_no_open(file, NULL);
	}
	if (err)
		return err;
	file->f_mode |= FMODE_CREATED;
	return finish_open(file, dentry, generic_file_open);
}

static struct dentry *zoidfs_mkdir(struct mnt_idmap *idmap, struct inode *dir,
				   struct dentry *dentry, umode_t mode)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_mkdir(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			      dentry->d_name.len, mode & 07777, &fh, &a);
	if (!err)
		err = zoidfs_instantiate(dir, dentry, &fh, &a);
	if (!err)
		zoidfs_dir_changed(dir);
	return ERR_PTR(err);
}

static int zoidfs_symlink(struct mnt_idmap *idmap, struct inode *dir,
			  struct dentry *dentry, const char *target)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_symlink(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				dentry->d_name.len, target, strlen(target), &fh, &a);
	if (err)
		return err;
	return zoidfs_instantiate(dir, dentry, &fh, &a);
}

static int zoidfs_link(struct dentry *old, struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(old);
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_link(zconn(dir), &ZI(inode)->fh, &ZI(dir)->fh,
			     dentry->d_name.name, dentry->d_name.len, &a);
	if (err)
		return err;
	zoidfs_apply_attr(inode, &a);
	ihold(inode);
	d_instantiate(dentry, inode);
	return 0;
}

static int zoidfs_unlink(struct inode *dir, struct dentry *dentry)
{
	int err = zoidfs_rs_remove(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				   dentry->d_name.len, false);

	if (!err)
		drop_nlink(d_inode(dentry));
	return err;
}

static int zoidfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	int err = zoidfs_rs_remove(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				   dentry->d_name.len, true);

	if (!err) {
		clear_nlink(d_inode(dentry));
		zoidfs_dir_changed(dir);
	}
	return err;
}

static int zoidfs_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			 struct dentry *old, struct inode *new_dir, struct dentry *new,
			 unsigned int flags)
{
	struct inode *target = d_inode(new);
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	err = zoidfs_rs_rename(zconn(old_dir), &ZI(old_dir)->fh, old->d_name.name,
			       old->d_name.len, &ZI(new_dir)->fh, new->d_name.name,
			       new->d_name.len, flags);
	if (err)
		return err;
	if (target && !(flags & RENAME_EXCHANGE)) {
		if (S_ISDIR(target->i_mode))
			clear_nlink(target);
		else
			drop_nlink(target);
	}
	if (S_ISDIR(d_inode(old)->i_mode) && old_dir != new_dir) {
		zoidfs_dir_changed(old_dir);
		zoidfs_dir_changed(new_dir);
	}
	return 0;
}

static const char *zoidfs_get_link(struct dentry *dentry, struct inode *inode,
				   struct delayed_call *done)
{
	ssize_t n;
	char *buf;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	n = zoidfs_rs_readlink(zconn(inode), &ZI(inode)->fh, buf, PATH_MAX - 1);
	if (n < 0) {
		kfree(buf);
		return ERR_PTR(n);
	}
	buf[n] = 0;
	set_delayed_call(done, kfree_link, buf);
	return buf;
}

/* ---- Attributes ---- */

static int zoidfs_getattr(struct mnt_idmap *idmap, const struct path *path,
			  struct kstat *stat, u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct zoidfs_attr a;
	int err;

	if (!(flags & AT_STATX_DONT_SYNC)) {
		err = zoidfs_rs_getattr(zconn(inode), &ZI(inode)->fh, &a);
		if (err)
			return err;
		zoidfs_apply_attr(inode, &a);
	}
	generic_fillattr(idmap, request_mask, inode, stat);
	return 0;
}

static int zoidfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			  struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	struct zoidfs_setattr s = {};
	struct zoidfs_attr a;
	int err;

	err = setattr_prepare(idmap, dentry, ia);
	if (err)
		return err;
	if (ia->ia_valid & ATTR_MODE) {
		s.valid |= ZOIDFS_SET_MODE;
		s.mode = ia->ia_mode & 07777;
	}
	if (ia->ia_valid & ATTR_UID) {
		s.valid |= ZOIDFS_SET_UID;
		s.uid = from_kuid(&init_user_ns, ia->ia_uid);
	}
	if (ia->ia_valid & ATTR_GID) {
		s.valid |= ZOIDFS_SET_GID;
		s.gid = from_kgid(&init_user_ns, ia->ia_gid);
	}
	if (ia->ia_valid & ATTR_SIZE) {
		s.valid |= ZOIDFS_SET_SIZE;
		s.size = ia->ia_size;
	}
	if (ia->ia_valid & ATTR_ATIME) {
		s.valid |= ZOIDFS_SET_ATIME;
		if (ia->ia_valid & ATTR_ATIME_SET) {
			s.atime_sec = ia->ia_atime.tv_sec;
			s.atime_nsec = ia->ia_atime.tv_nsec;
		} else {
			s.valid |= ZOIDFS_SET_ATIME_NOW;
		}
	}
	if (ia->ia_valid & ATTR_MTIME) {
		s.valid |= ZOIDFS_SET_MTIME;
		if (ia->ia_valid & ATTR_MTIME_SET) {
			s.mtime_sec = ia->ia_mtime.tv_sec;
			s.mtime_nsec = ia->ia_mtime.tv_nsec;
		} else {
			s.valid |= ZOIDFS_SET_MTIME_NOW;
		}
	}
	if (!s.valid)
		return 0;
	err = zoidfs_rs_setattr(zconn(inode), &ZI(inode)->fh, &s, &a);
	if (err)
		return err;
	if (ia->ia_valid & ATTR_SIZE)
		truncate_pagecache(inode, ia->ia_size);
	zoidfs_apply_attr(inode, &a);
	return 0;
}

/* ---- Directories ---- */

static bool zoidfs_emit(void *p, const char *name, size_t len, u64 ino,
			unsigned int type, s64 next)
{
	struct dir_context *ctx = p;

	if (!dir_emit(ctx, name, len, ino, type))
		return false;
	ctx->pos = next;
	return true;
}

static int zoidfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	ssize_t n;

	if (!dir_emit_dots(file, ctx))
		return 0;
	for (;;) {
		loff_t before = ctx->pos;
		s64 cookie = before == ZOIDFS_DIR_START ? 0 : before;

		n = zoidfs_rs_readdir(zconn(dir), &ZI(dir)->fh, cookie,
				      ZOIDFS_READDIR_BYTES, zoidfs_emit, ctx);
		if (n < 0)
			return n;
		/* The end, a full buffer, or a cookie that went nowhere. */
		if (n == 0 || ctx->pos == before)
			return 0;
		if (ctx->pos <= ZOIDFS_DIR_START) {
			pr_warn_once("zoidfs: ION readdir cookie %lld collides with . and ..\n",
				     ctx->pos);
			return -EIO;
		}
	}
}

/* ---- Files ---- */

static int zoidfs_open(struct inode *inode, struct file *file)
{
	file->f_mode |= FMODE_CAN_ODIRECT;
	return generic_file_open(inode, file);
}

static ssize_t zoidfs_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	size_t chunk = min_t(size_t, iov_iter_count(to), sbi->rsize);
	ssize_t done = 0, n;
	void *buf;

	if (!iov_iter_count(to))
		return 0;
	buf = kvmalloc(chunk, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	while (iov_iter_count(to)) {
		size_t want = min_t(size_t, iov_iter_count(to), chunk);

		n = zoidfs_rs_read(&sbi->conn, &ZI(inode)->fh, iocb->ki_pos, buf, want);
		if (n <= 0)
			break;
		if (copy_to_iter(buf, n, to) != n) {
			n = -EFAULT;
			break;
		}
		iocb->ki_pos += n;
		done += n;
		if (n < want)
			break;
	}
	kvfree(buf);
	return done ? done : n;
}

static ssize_t zoidfs_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	bool sync = iocb_is_dsync(iocb);
	struct zoidfs_attr a;
	bool have_attr = false;
	ssize_t done = 0, n;
	size_t chunk;
	loff_t start;
	void *buf;

	inode_lock(inode);
	n = generic_write_checks(iocb, from);
	if (n <= 0)
		goto out_unlock;
	n = file_remove_privs(iocb->ki_filp);
	if (n)
		goto out_unlock;
	chunk = min_t(size_t, iov_iter_count(from), sbi->wsize);
	buf = kvmalloc(chunk, GFP_KERNEL);
	n = -ENOMEM;
	if (!buf)
		goto out_unlock;
	start = iocb->ki_pos;
	while (iov_iter_count(from)) {
		size_t want = min_t(size_t, iov_iter_count(from), chunk);
		/* Appends go to the ION's end of file, not our idea of it. */
		s64 at = (iocb->ki_flags & IOCB_APPEND) ? ZOIDFS_APPEND : iocb->ki_pos;

		if (copy_from_iter(buf, want, from) != want) {
			n = -EFAULT;
			break;
		}
		n = zoidfs_rs_write(&sbi->conn, &ZI(inode)->fh, at, buf, want, sync, &a);
		if (n < 0)
			break;
		have_attr = true;
		if (at == ZOIDFS_APPEND) {
			/* The data ends where the file now ends. */
			iocb->ki_pos = a.size;
			if (!done)
				start = a.size - n;
		} else {
			iocb->ki_pos += n;
		}
		done += n;
		if (n < want) {
			iov_iter_revert(from, want - n);
			break;
		}
	}
	kvfree(buf);
	if (have_attr)
		zoidfs_apply_attr(inode, &a);
	if (done && inode->i_mapping->nrpages)
		invalidate_inode_pages2_range(inode->i_mapping, start >> PAGE_SHIFT,
					      (start + done - 1) >> PAGE_SHIFT);
out_unlock:
	inode_unlock(inode);
	return done ? done : n;
}

static int zoidfs_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);

	return zoidfs_rs_commit(zconn(inode), &ZI(inode)->fh, datasync);
}

/* mmap reads through the page cache; each folio is one read call. */
static int zoidfs_read_folio(struct file *file, struct folio *folio)
{
	struct inode *inode = folio->mapping->host;
	loff_t pos = folio_pos(folio);
	size_t len = folio_size(folio), off;
	ssize_t n = 0;

	for (off = 0; off < len; off += PAGE_SIZE) {
		void *addr = kmap_local_folio(folio, off);

		n = zoidfs_rs_read(zconn(inode), &ZI(inode)->fh, pos + off, addr, PAGE_SIZE);
		if (n >= 0 && n < PAGE_SIZE)
			memset(addr + n, 0, PAGE_SIZE - n);
		kunmap_local(addr);
		if (n < 0)
			break;
	}
	folio_end_read(folio, n >= 0);
	return n < 0 ? n : 0;
}

static const struct address_space_operations zoidfs_aops = {
	.read_folio = zoidfs_read_folio,
};

static const struct file_operations zoidfs_file_fops = {
	.owner = THIS_MODULE,
	.open = zoidfs_open,
	.llseek = generic_file_llseek,
	.read_iter = zoidfs_read_iter,
	.write_iter = zoidfs_write_iter,
	.mmap = generic_file_readonly_mmap,
	.fsync = zoidfs_fsync,
	.splice_read = copy_splice_read,
};

static const struct file_operations zoidfs_dir_fops = {
	.owner = THIS_MODULE,
	.llseek = generic_file_llseek,
	.read = generic_read_dir,
	.iterate_shared = zoidfs_readdir,
	.fsync = zoidfs_fsync,
};

static const struct inode_operations zoidfs_dir_iops = {
	.lookup = zoidfs_lookup,
	.atomic_open = zoidfs_atomic_open,
	.create = zoidfs_create,
	.mkdir = zoidfs_mkdir,
	.symlink = zoidfs_symlink,
	.link = zoidfs_link,
	.unlink = zoidfs_unlink,
	.rmdir = zoidfs_rmdir,
	.rename = zoidfs_rename,
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
};

static const struct inode_operations zoidfs_file_iops = {
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
};

static const struct inode_operations zoidfs_symlink_iops = {
	.get_link = zoidfs_get_link,
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
};

/* ---- Superblock ---- */

static int zoidfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct inode *inode = d_inode(dentry);
	struct zoidfs_statfs st;
	int err;

	err = zoidfs_rs_statfs(zconn(inode), &ZI(inode)->fh, &st);
	if (err)
		return err;
	buf->f_type = ZOIDFS_MAGIC;
	buf->f_bsize = st.bsize;
	buf->f_frsize = st.frsize;
	buf->f_blocks = st.blocks;
	buf->f_bfree = st.bfree;
	buf->f_bavail = st.bavail;
	buf->f_files = st.files;
	buf->f_ffree = st.ffree;
	buf->f_namelen = st.namelen;
	return 0;
}

static int zoidfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct zoidfs_sb *sbi = ZSB(root->d_sb);

	seq_printf(m, ",ion=%u", sbi->ion);
	if (sbi->export && *sbi->export)
		seq_show_option(m, "export", sbi->export);
	seq_printf(m, ",cache=none,%s,timeo=%u,retrans=%u,rsize=%u,wsize=%u",
		   sbi->hard ? "hard" : "soft", sbi->timeo, sbi->retrans, sbi->rsize,
		   sbi->wsize);
	return 0;
}

static const struct super_operations zoidfs_sops = {
	.alloc_inode = zoidfs_alloc_inode,
	.free_inode = zoidfs_free_inode,
	.statfs = zoidfs_statfs,
	.drop_inode = inode_just_drop,
	.show_options = zoidfs_show_options,
};

/* ---- Mounting ---- */

enum { Opt_ion, Opt_export, Opt_cache, Opt_timeo, Opt_retrans, Opt_soft, Opt_hard,
	Opt_rsize, Opt_wsize };

enum { Cache_none, Cache_strict, Cache_loose };

static const struct constant_table zoidfs_cache_modes[] = {
	{ "none", Cache_none },
	{ "strict", Cache_strict },
	{ "loose", Cache_loose },
	{}
};

static const struct fs_parameter_spec zoidfs_params[] = {
	fsparam_u32("ion", Opt_ion),
	fsparam_string("export", Opt_export),
	fsparam_enum("cache", Opt_cache, zoidfs_cache_modes),
	fsparam_u32("timeo", Opt_timeo),
	fsparam_u32("retrans", Opt_retrans),
	fsparam_flag("soft", Opt_soft),
	fsparam_flag("hard", Opt_hard),
	fsparam_u32("rsize", Opt_rsize),
	fsparam_u32("wsize", Opt_wsize),
	{}
};

/* What the mount options asked for (fs_context's private data). */
struct zoidfs_ctx {
	u32 ion;		/* U32_MAX: the CN's ION, whichever it is */
	char *export;
	u32 timeo;
	u32 retrans;
	u32 rsize;
	u32 wsize;
	bool hard;
};

static int zoidfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct zoidfs_ctx *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, zoidfs_params, param, &result);
	if (opt < 0)
		return opt;
	switch (opt) {
	case Opt_ion:
		if (result.uint_32 > U16_MAX)
			return invalfc(fc, "ion=%u is not a node id", result.uint_32);
		ctx->ion = result.uint_32;
		break;
	case Opt_export:
		if (strlen(param->string) > 64 || strchr(param->string, '/'))
			return invalfc(fc, "export=%s is not an export name", param->string);
		kfree(ctx->export);
		ctx->export = param->string;
		param->string = NULL;
		break;
	case Opt_cache:
		if (result.uint_32 != Cache_none)
			return invalfc(fc, "cache=%s is not implemented yet (use cache=none)",
				       param->string);
		break;
	case Opt_timeo:
		if (!result.uint_32 || result.uint_32 > 36000)
			return invalfc(fc, "timeo=%u out of range (1..36000 tenths of a second)",
				       result.uint_32);
		ctx->timeo = result.uint_32;
		break;
	case Opt_retrans:
		if (result.uint_32 > 100)
			return invalfc(fc, "retrans=%u out of range (0..100)", result.uint_32);
		ctx->retrans = result.uint_32;
		break;
	case Opt_soft:
		ctx->hard = false;
		break;
	case Opt_hard:
		ctx->hard = true;
		break;
	case Opt_rsize:
	case Opt_wsize:
		if (result.uint_32 < PAGE_SIZE)
			return invalfc(fc, "%s=%u is below a page", param->key, result.uint_32);
		if (opt == Opt_rsize)
			ctx->rsize = result.uint_32;
		else
			ctx->wsize = result.uint_32;
		break;
	}
	return 0;
}

/* A transfer size: what was asked for, capped by the ION, whole pages. */
static u32 zoidfs_io_size(u32 asked, u32 ion_max)
{
	u32 cap = ion_max > ZOIDFS_CALL_OVERHEAD + PAGE_SIZE ?
		ion_max - ZOIDFS_CALL_OVERHEAD : PAGE_SIZE;

	cap = min(cap, ZOIDFS_MAX_IO);
	if (asked)
		cap = min(cap, asked);
	return max_t(u32, round_down(cap, PAGE_SIZE), PAGE_SIZE);
}

static int zoidfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct zoidfs_ctx *ctx = fc->fs_private;
	u32 ion, max_request, max_reply;
	struct zoidfs_attr a;
	struct zoidfs_sb *sbi;
	struct inode *root;
	const char *export;
	int err;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sb->s_fs_info = sbi;
	sbi->timeo = ctx->timeo;
	sbi->retrans = ctx->retrans;
	sbi->hard = ctx->hard;
	sbi->conn.mode = ctx->hard ? ZOID_CALL_HARD : ZOID_CALL_SOFT;
	sbi->conn.timeout_ms = min_t(u64, (u64)ctx->timeo * 100 * (ctx->retrans + 1), U32_MAX);
	sbi->export = ctx->export;
	ctx->export = NULL;
	export = sbi->export ? sbi->export : "";

	err = zoidfs_rs_connect(&ion, &max_request, &max_reply);
	if (err)
		return errorfc(fc, "no ION answers this CN (%d): is zoid loaded and the pset up?",
			       err), err;
	if (ctx->ion != U32_MAX && ctx->ion != ion)
		return errorfc(fc, "ion=%u is not this CN's ION (node %u)", ctx->ion, ion),
			-EHOSTUNREACH;
	sbi->ion = ion;
	sbi->rsize = zoidfs_io_size(ctx->rsize, max_reply);
	sbi->wsize = zoidfs_io_size(ctx->wsize, max_request);

	err = zoidfs_rs_root(&sbi->conn, export, strlen(export), &sbi->root, &a);
	if (err == -ENOENT)
		return errorfc(fc, "ION %u has no export \"%s\"", ion, export), err;
	if (err)
		return errorfc(fc, "ION %u: root of export \"%s\" failed (%d)", ion, export,
			       err), err;
	if (!S_ISDIR(a.mode))
		return errorfc(fc, "export root is not a directory"), -ENOTDIR;

	sb->s_magic = ZOIDFS_MAGIC;
	sb->s_op = &zoidfs_sops;
	set_default_d_op(sb, &zoidfs_dentry_ops);
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_time_gran = 1;
	sb->s_flags |= SB_NOATIME;
	root = zoidfs_iget(sb, &sbi->root, &a);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	pr_info("zoidfs: mounted export \"%s\" of ION %u (rsize %u, wsize %u, %s)\n",
		export, ion, sbi->rsize, sbi->wsize, sbi->hard ? "hard" : "soft");
	return 0;
}

static int zoidfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, zoidfs_fill_super);
}

static void zoidfs_free_fc(struct fs_context *fc)
{
	struct zoidfs_ctx *ctx = fc->fs_private;

	if (ctx) {
		kfree(ctx->export);
		kfree(ctx);
	}
}

static const struct fs_context_operations zoidfs_context_ops = {
	.parse_param = zoidfs_parse_param,
	.get_tree = zoidfs_get_tree,
	.free = zoidfs_free_fc,
};

static int zoidfs_init_fs_context(struct fs_context *fc)
{
	struct zoidfs_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	ctx->ion = U32_MAX;
	ctx->timeo = 600;	/* 60 s, like NFS over TCP */
	ctx->retrans = 2;
	ctx->hard = true;
	fc->fs_private = ctx;
	fc->ops = &zoidfs_context_ops;
	return 0;
}

static void zoidfs_kill_sb(struct super_block *sb)
{
	struct zoidfs_sb *sbi = ZSB(sb);

	kill_anon_super(sb);
	if (sbi) {
		kfree(sbi->export);
		kfree(sbi);
	}
}

static struct file_system_type zoidfs_fs_type = {
	.owner = THIS_MODULE,
	.name = "zoidfs",
	.init_fs_context = zoidfs_init_fs_context,
	.parameters = zoidfs_params,
	.kill_sb = zoidfs_kill_sb,
};

int zoidfs_register(void)
{
	int err;

	zoidfs_inode_cache = kmem_cache_create("zoidfs_inode_cache",
					       sizeof(struct zoidfs_inode), 0,
					       SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
					       zoidfs_inode_init_once);
	if (!zoidfs_inode_cache)
		return -ENOMEM;
	err = register_filesystem(&zoidfs_fs_type);
	if (err)
		kmem_cache_destroy(zoidfs_inode_cache);
	return err;
}

void zoidfs_unregister(void)
{
	unregister_filesystem(&zoidfs_fs_type);
	/* Inodes are freed after an RCU grace period. */
	rcu_barrier();
	kmem_cache_destroy(zoidfs_inode_cache);
}

MODULE_ALIAS_FS("zoidfs");
