// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: objects of an export named by file handles (the
 * zoidfs plug-in's stateless handles), after nfsd's vfs.c.
 *
 * A zk_obj is a referenced path (the export's mount and a dentry below its
 * root).  Handles are exportfs file handles: [fh type][fid words]; decoding
 * accepts only dentries below the export's root, and an object that no
 * longer exists decodes to -ESTALE.  Names are single components (the Rust
 * side refuses "", ".", "..", "/" and NUL); every operation runs with the
 * caller's credentials (installed by the Rust side), so the usual
 * permission checks apply.  Included after vfs.c (zk_fill_stat and the
 * zk_*_at cores it shares with the path-based calls).
 */
#include <linux/exportfs.h>
#include <linux/fs_struct.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/statfs.h>
#include <linux/xattr.h>

/*
 * Flags an object's attributes carry above the mode's 16 bits
 * (zoid_proto's zoidfs::MODE_HAS_ACL and MODE_HAS_DEFAULT_ACL).
 */
#define ZK_MODE_HAS_ACL		(1u << 16)
#define ZK_MODE_HAS_DEFAULT_ACL	(1u << 17)

/* Fid words a handle holds: 63 bytes after the type byte, rounded down. */
#define ZK_FID_WORDS 15

struct zk_obj {
	struct path path;
};

static struct zk_obj *zk_obj_new(struct vfsmount *mnt, struct dentry *d, int *err)
{
	struct zk_obj *o = kmalloc(sizeof(*o), GFP_KERNEL);

	if (!o) {
		dput(d);
		*err = -ENOMEM;
		return NULL;
	}
	o->path.mnt = mntget(mnt);
	o->path.dentry = d;
	*err = 0;
	return o;
}

/*
 * A stable number for an export: its filesystem's device and its root
 * inode, so handles name the same export after an ION restart and never
 * another one (the Rust side refuses two exports with one id).
 */
u32 zk_export_id(struct zk_export *e)
{
	u64 v = (u64)new_encode_dev(e->root.dentry->d_sb->s_dev) << 32;

	v ^= d_inode(e->root.dentry)->i_ino;
	v *= 0x9e3779b97f4a7c15ULL;
	return (u32)(v >> 32) ^ (u32)v;
}

void zk_obj_put(struct zk_obj *o)
{
	path_put(&o->path);
	kfree(o);
}

struct zk_obj *zk_export_root_obj(struct zk_export *e, int *err)
{
	return zk_obj_new(e->root.mnt, dget(e->root.dentry), err);
}

/* The handle of @o: [type][fid], at most @cap bytes; its length or -errno. */
int zk_obj_fh(struct zk_obj *o, u8 *buf, u32 cap)
{
	u32 fid[ZK_FID_WORDS];
	int words = ZK_FID_WORDS;
	int type;

	type = exportfs_encode_fh(o->path.dentry, (struct fid *)fid, &words, 0);
	if (type < 0)
		return type;
	if (type == FILEID_INVALID || type > 255 || words > ZK_FID_WORDS ||
	    1 + 4 * words > cap)
		return -EOVERFLOW;
	buf[0] = type;
	memcpy(buf + 1, fid, 4 * words);
	return 1 + 4 * words;
}

/*
 * Accept only dentries at or below the export's root.  A file (not a
 * directory: those are always reconnected) that is not in the dcache, as
 * after the ION rebooted, comes back disconnected, with no path to check:
 * it is accepted when the export is the root of its filesystem (every
 * inode there is inside the export), and stale otherwise (docs/zoidfs.md,
 * "Handles").
 */
static int zk_below_root(void *ctx, struct dentry *d)
{
	struct zk_export *e = ctx;
	struct super_block *sb = e->root.dentry->d_sb;

	if (e->root.dentry == sb->s_root && d->d_sb == sb)
		return 1;
	return is_subdir(d, e->root.dentry);
}

struct zk_obj *zk_fh_resolve(struct zk_export *e, const u8 *fh, u32 len, int *err)
{
	u32 fid[ZK_FID_WORDS];
	struct dentry *d;

	if (len < 1 + 4 || (len - 1) % 4 || (len - 1) / 4 > ZK_FID_WORDS) {
		*err = -ESTALE;
		return NULL;
	}
	memcpy(fid, fh + 1, len - 1);
	d = exportfs_decode_fh(e->root.mnt, (struct fid *)fid, (len - 1) / 4, fh[0],
			       zk_below_root, e);
	if (IS_ERR_OR_NULL(d)) {
		/* A handle that names nothing here is stale, whatever the reason. */
		*err = d ? PTR_ERR(d) : -ESTALE;
		if (*err != -ENOMEM && *err != -EACCES)
			*err = -ESTALE;
		return NULL;
	}
	return zk_obj_new(e->root.mnt, d, err);
}

/* Whether @inode has an ACL of @type (filesystems cache them in the inode). */
static bool zk_has_acl(struct inode *inode, int type)
{
#ifdef CONFIG_FS_POSIX_ACL
	struct posix_acl *acl = get_inode_acl(inode, type);

	if (IS_ERR_OR_NULL(acl))
		return false;
	posix_acl_release(acl);
	return true;
#else
	return false;
#endif
}

int zk_obj_stat(struct zk_obj *o, struct zk_stat *st)
{
	struct inode *inode = d_inode(o->path.dentry);
	struct kstat k;
	int err = vfs_getattr(&o->path, &k, STATX_BASIC_STATS, AT_STATX_SYNC_AS_STAT);

	if (err)
		return err;
	zk_fill_stat(&k, st);
	/* What the CN needs to know to cache "no ACL" (no call per check). */
	if (IS_POSIXACL(inode) && !S_ISLNK(inode->i_mode)) {
		if (zk_has_acl(inode, ACL_TYPE_ACCESS))
			st->mode |= ZK_MODE_HAS_ACL;
		if (S_ISDIR(inode->i_mode) && zk_has_acl(inode, ACL_TYPE_DEFAULT))
			st->mode |= ZK_MODE_HAS_DEFAULT_ACL;
	}
	return 0;
}

/*
 * The CN applied its caller's umask to a new object's mode already, or,
 * under a default ACL, must not have one applied (the ACL decides): the
 * ION makes it with umask 0.  Kernel threads share init_fs (umask 0022),
 * so the first make gives this thread an fs_struct of its own, as nfsd's
 * threads have.  Returns the umask to restore, or a negative errno.
 */
static int zk_umask_off(void)
{
	struct fs_struct *fs = current->fs;
	bool shared;
	int old, err;

	read_seqlock_excl(&fs->seq);
	shared = fs->users > 1;
	read_sequnlock_excl(&fs->seq);
	if (shared) {
		err = unshare_fs_struct();
		if (err)
			return err;
	}
	old = current->fs->umask;
	current->fs->umask = 0;
	return old;
}

static int zk_dir_check(struct zk_obj *dir)
{
	return d_can_lookup(dir->path.dentry) ? 0 : -ENOTDIR;
}

struct zk_obj *zk_obj_lookup(struct zk_obj *dir, const char *name, u32 len, int *err)
{
	struct qstr q = QSTR_LEN(name, len);
	struct dentry *d;

	*err = zk_dir_check(dir);
	if (*err)
		return NULL;
	d = lookup_one_unlocked(mnt_idmap(dir->path.mnt), &q, dir->path.dentry);
	if (IS_ERR(d)) {
		*err = PTR_ERR(d);
		return NULL;
	}
	if (d_is_negative(d)) {
		dput(d);
		*err = -ENOENT;
		return NULL;
	}
	return zk_obj_new(dir->path.mnt, d, err);
}

struct zk_obj *zk_obj_create(struct zk_obj *dir, const char *name, u32 len, u32 mode,
			     int kind, const char *target, u32 rdev, int *err)
{
	struct qstr q = QSTR_LEN(name, len);
	int umask = zk_umask_off();
	struct dentry *d = NULL;

	if (umask < 0) {
		*err = umask;
		return NULL;
	}
	*err = zk_dir_check(dir) ?: zk_make_at(&dir->path, &q, mode, kind, target, rdev, &d);
	current->fs->umask = umask;
	return *err ? NULL : zk_obj_new(dir->path.mnt, d, err);
}

/*
 * As may_linkat() with protected_hardlinks on (the default; here always,
 * whatever the sysctl): a link only to a file the caller owns, or to a
 * regular file it may read and write that is neither set-user-id nor
 * set-group-id and executable.
 */
static int zk_may_link(const struct path *p)
{
	struct mnt_idmap *idmap = mnt_idmap(p->mnt);
	struct inode *inode = d_inode(p->dentry);
	umode_t mode = inode->i_mode;

	if (!vfsuid_valid(i_uid_into_vfsuid(idmap, inode)) ||
	    !vfsgid_valid(i_gid_into_vfsgid(idmap, inode)))
		return -EOVERFLOW;
	if (inode_owner_or_capable(idmap, inode))
		return 0;
	if (S_ISREG(mode) && !(mode & S_ISUID) &&
	    (mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
	    !inode_permission(idmap, inode, MAY_READ | MAY_WRITE))
		return 0;
	return -EPERM;
}

int zk_obj_link(struct zk_obj *o, struct zk_obj *dir, const char *name, u32 len)
{
	struct qstr q = QSTR_LEN(name, len);
	struct vfsmount *mnt = dir->path.mnt;
	struct mnt_idmap *idmap = mnt_idmap(mnt);
	struct dentry *d;
	int err = zk_dir_check(dir);

	if (err)
		return err;
	if (o->path.mnt != mnt)
		return -EXDEV;
	err = zk_may_link(&o->path);
	if (err)
		return err;
	err = mnt_want_write(mnt);
	if (err)
		return err;
	d = start_creating(idmap, dir->path.dentry, &q);
	if (IS_ERR(d)) {
		err = PTR_ERR(d);
	} else {
		err = d_is_positive(d) ? -EEXIST :
			vfs_link(o->path.dentry, idmap, d_inode(dir->path.dentry), d, NULL);
		end_creating(d);
	}
	mnt_drop_write(mnt);
	return err;
}

int zk_obj_remove(struct zk_obj *dir, const char *name, u32 len, bool is_dir)
{
	struct qstr q = QSTR_LEN(name, len);

	return zk_dir_check(dir) ?: zk_remove_at(&dir->path, &q, is_dir);
}

int zk_obj_rename(struct zk_obj *from_dir, const char *from, u32 from_len,
		  struct zk_obj *to_dir, const char *to, u32 to_len, u32 flags)
{
	struct qstr old_last = QSTR_LEN(from, from_len);
	struct qstr new_last = QSTR_LEN(to, to_len);
	int err = zk_dir_check(from_dir) ?: zk_dir_check(to_dir);

	if (err)
		return err;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	return zk_rename_at(&from_dir->path, &old_last, &to_dir->path, &new_last, flags);
}

int zk_obj_readlink(struct zk_obj *o, u8 *buf, u32 size)
{
	DEFINE_DELAYED_CALL(done);
	const char *link;
	size_t len;

	if (!d_is_symlink(o->path.dentry))
		return -EINVAL;
	link = vfs_get_link(o->path.dentry, &done);
	if (IS_ERR(link))
		return PTR_ERR(link);
	len = strlen(link);
	memcpy(buf, link, min_t(size_t, len, size));
	do_delayed_call(&done);
	return min_t(size_t, len, INT_MAX);
}

/*
 * A CN is not trusted (docs/reliability.md, "Threat model"): its kernel
 * checked permissions already, but a CN root passes any check of its own
 * kernel.  So the ION checks every access to an object again, with the
 * caller's mapped credentials (installed by the Rust side), as
 * nfsd_permission() checks an NFS call: dentry_open() checks nothing.
 */
#define ZK_MAY_READ		(1 << 0)
#define ZK_MAY_WRITE		(1 << 1)
/* The owner passes, whatever the mode (a file written through a
 * descriptor opened before a chmod, or created with mode 0). */
#define ZK_MAY_OWNER_OVERRIDE	(1 << 2)
/* Who may execute a regular file may read it (a CN pages a 0711 program
 * in), unless the export's mount is noexec. */
#define ZK_MAY_READ_IF_EXEC	(1 << 3)
/* Shrinking a file (refused on an append-only one). */
#define ZK_MAY_TRUNC		(1 << 4)

static bool zk_noexec(const struct path *p)
{
	return (p->mnt->mnt_flags & MNT_NOEXEC) || (p->mnt->mnt_sb->s_iflags & SB_I_NOEXEC);
}

static int zk_permission(const struct path *p, int acc)
{
	struct inode *inode = d_inode(p->dentry);
	struct mnt_idmap *idmap = mnt_idmap(p->mnt);
	int mask = (acc & ZK_MAY_READ ? MAY_READ : 0) | (acc & ZK_MAY_WRITE ? MAY_WRITE : 0);
	int err;

	if (acc & (ZK_MAY_WRITE | ZK_MAY_TRUNC)) {
		if (__mnt_is_readonly(p->mnt))
			return -EROFS;
		if (IS_IMMUTABLE(inode))
			return -EPERM;
	}
	if ((acc & ZK_MAY_TRUNC) && IS_APPEND(inode))
		return -EPERM;
	if ((acc & ZK_MAY_OWNER_OVERRIDE) &&
	    vfsuid_eq_kuid(i_uid_into_vfsuid(idmap, inode), current_fsuid()))
		return 0;
	err = inode_permission(idmap, inode, mask);
	if (err == -EACCES && mask == MAY_READ && (acc & ZK_MAY_READ_IF_EXEC) &&
	    S_ISREG(inode->i_mode) && !zk_noexec(p))
		err = inode_permission(idmap, inode, MAY_EXEC);
	return err;
}

/* What a call opens an object for (zoid_kernel::vfs::Access). */
enum {
	ZK_ACCESS_READ = 0, ZK_ACCESS_WRITE = 1, ZK_ACCESS_APPEND = 2, ZK_ACCESS_COMMIT = 3,
	ZK_ACCESS_LIST = 4,
};

/*
 * Opens the object for @access (read, write, readdir and fsync go through
 * the struct file; the Rust side wraps it as a File), after the checks an
 * open(2) on the ION would make: data only of a regular file, listing only
 * of a directory (so a FIFO or a device in the export is never opened by a
 * CN's call), the caller's permission as zk_permission() decides, and an
 * append-only file written only at its end.
 */
struct file *zk_obj_open(struct zk_obj *o, int access, int *err)
{
	struct inode *inode = d_inode(o->path.dentry);
	int flags, acc;
	struct file *f;

	switch (access) {
	case ZK_ACCESS_READ:
		flags = O_RDONLY;
		acc = ZK_MAY_READ | ZK_MAY_OWNER_OVERRIDE | ZK_MAY_READ_IF_EXEC;
		break;
	case ZK_ACCESS_WRITE:
	case ZK_ACCESS_APPEND:
		flags = O_WRONLY | (access == ZK_ACCESS_APPEND ? O_APPEND : 0);
		acc = ZK_MAY_WRITE | ZK_MAY_OWNER_OVERRIDE;
		break;
	case ZK_ACCESS_COMMIT:
		/* fsync(2) works on any descriptor: who may read or write. */
		flags = O_RDONLY;
		acc = ZK_MAY_READ | ZK_MAY_OWNER_OVERRIDE;
		break;
	case ZK_ACCESS_LIST:
		flags = O_RDONLY | O_DIRECTORY;
		acc = ZK_MAY_READ;
		break;
	default:
		*err = -EINVAL;
		return NULL;
	}
	if (access == ZK_ACCESS_LIST)
		*err = S_ISDIR(inode->i_mode) ? 0 : -ENOTDIR;
	else
		*err = S_ISREG(inode->i_mode) ? 0 : S_ISDIR(inode->i_mode) ? -EISDIR : -EINVAL;
	if (*err)
		return NULL;
	if (access == ZK_ACCESS_WRITE && IS_APPEND(inode)) {
		*err = -EPERM;
		return NULL;
	}
	*err = zk_permission(&o->path, acc);
	if (*err == -EACCES && access == ZK_ACCESS_COMMIT)
		*err = zk_permission(&o->path, ZK_MAY_WRITE | ZK_MAY_OWNER_OVERRIDE);
	if (*err)
		return NULL;
	f = dentry_open(&o->path, flags | O_LARGEFILE, current_cred());
	if (IS_ERR(f)) {
		*err = PTR_ERR(f);
		return NULL;
	}
	return f;
}

/*
 * A regular file's new size, as nfsd_setattr() sets it: write permission
 * (the owner's whatever the mode, so ftruncate() through the descriptor
 * that created a mode 0 file works), never an append-only file's.
 */
static int zk_obj_truncate(struct zk_obj *o, s64 size)
{
	struct dentry *d = o->path.dentry;
	struct inode *inode = d_inode(d);
	struct iattr attr = {
		.ia_valid = ATTR_SIZE | ATTR_CTIME | ATTR_MTIME,
		.ia_size = size,
	};
	int err;

	if (d_is_dir(d))
		return -EISDIR;
	if (!d_is_reg(d))
		return -EINVAL;
	if (size < 0)
		return -EINVAL;
	if (IS_APPEND(inode))
		return -EPERM;
	err = zk_permission(&o->path, ZK_MAY_WRITE | ZK_MAY_OWNER_OVERRIDE |
			    (size < i_size_read(inode) ? ZK_MAY_TRUNC : 0));
	if (err)
		return err;
	err = mnt_want_write(o->path.mnt);
	if (err)
		return err;
	err = get_write_access(inode);
	if (!err) {
		inode_lock(inode);
		err = notify_change(mnt_idmap(o->path.mnt), d, &attr, NULL);
		inode_unlock(inode);
		put_write_access(inode);
	}
	mnt_drop_write(o->path.mnt);
	return err;
}

/* setattr: ZK_SET_* bits as zoidfs's (mode, uid, gid, size, times). */
#define ZK_SET_MODE		(1 << 0)
#define ZK_SET_UID		(1 << 1)
#define ZK_SET_GID		(1 << 2)
#define ZK_SET_SIZE		(1 << 3)
#define ZK_SET_ATIME		(1 << 4)
#define ZK_SET_MTIME		(1 << 5)
#define ZK_SET_ATIME_NOW	(1 << 6)
#define ZK_SET_MTIME_NOW	(1 << 7)

int zk_obj_setattr(struct zk_obj *o, const struct zk_setattr *s)
{
	struct dentry *d = o->path.dentry;
	struct inode *inode = d_inode(d);
	struct mnt_idmap *idmap = mnt_idmap(o->path.mnt);
	struct iattr attr = {};
	int err;

	if (s->valid & ZK_SET_SIZE) {
		err = zk_obj_truncate(o, s->size);
		if (err)
			return err;
	}
	if (s->valid & ZK_SET_MODE) {
		attr.ia_valid |= ATTR_MODE;
		attr.ia_mode = (s->mode & S_IALLUGO) | (inode->i_mode & ~S_IALLUGO);
	}
	if (s->valid & ZK_SET_UID) {
		attr.ia_valid |= ATTR_UID;
		attr.ia_vfsuid = VFSUIDT_INIT(make_kuid(&init_user_ns, s->uid));
		if (!vfsuid_valid(attr.ia_vfsuid))
			return -EINVAL;
	}
	if (s->valid & ZK_SET_GID) {
		attr.ia_valid |= ATTR_GID;
		attr.ia_vfsgid = VFSGIDT_INIT(make_kgid(&init_user_ns, s->gid));
		if (!vfsgid_valid(attr.ia_vfsgid))
			return -EINVAL;
	}
	if (s->valid & ZK_SET_ATIME) {
		attr.ia_valid |= ATTR_ATIME;
		if (!(s->valid & ZK_SET_ATIME_NOW)) {
			attr.ia_valid |= ATTR_ATIME_SET;
			attr.ia_atime.tv_sec = s->atime_sec;
			attr.ia_atime.tv_nsec = s->atime_nsec;
		}
	}
	if (s->valid & ZK_SET_MTIME) {
		attr.ia_valid |= ATTR_MTIME;
		if (!(s->valid & ZK_SET_MTIME_NOW)) {
			attr.ia_valid |= ATTR_MTIME_SET;
			attr.ia_mtime.tv_sec = s->mtime_sec;
			attr.ia_mtime.tv_nsec = s->mtime_nsec;
		}
	}
	if (!attr.ia_valid)
		return 0;
	/*
	 * As utimensat(2): times given need the owner (setattr_prepare
	 * checks), "now" needs write permission or the owner (may_setattr
	 * checks ATTR_TOUCH).
	 */
	if (attr.ia_valid & (ATTR_ATIME_SET | ATTR_MTIME_SET))
		attr.ia_valid |= ATTR_TIMES_SET;
	else if (attr.ia_valid & (ATTR_ATIME | ATTR_MTIME))
		attr.ia_valid |= ATTR_TOUCH;
	if (attr.ia_valid & (ATTR_MODE | ATTR_UID | ATTR_GID))
		attr.ia_valid |= ATTR_CTIME;
	err = mnt_want_write(o->path.mnt);
	if (err)
		return err;
	inode_lock(inode);
	err = notify_change(idmap, d, &attr, NULL);
	inode_unlock(inode);
	mnt_drop_write(o->path.mnt);
	return err;
}

/*
 * Extended attributes (the Rust side passes only the namespaces zoidfs
 * forwards, NUL-terminated): as the syscalls, with the caller's
 * credentials' permission checks.
 */
ssize_t zk_obj_getxattr(struct zk_obj *o, const char *name, void *buf, u32 size)
{
#ifdef CONFIG_FS_POSIX_ACL
	/* ACLs in their xattr form, as getxattr(2) gives them (do_get_acl). */
	if (is_posix_acl_xattr(name)) {
		struct posix_acl *acl = vfs_get_acl(mnt_idmap(o->path.mnt), o->path.dentry, name);
		ssize_t ret;
		void *value;
		size_t len;

		if (IS_ERR(acl))
			return PTR_ERR(acl);
		value = posix_acl_to_xattr(&init_user_ns, acl, &len, GFP_KERNEL);
		posix_acl_release(acl);
		if (!value)
			return -ENOMEM;
		ret = len;
		if (size && len > size)
			ret = -ERANGE;
		else if (size)
			memcpy(buf, value, len);
		kfree(value);
		return ret;
	}
#endif
	return vfs_getxattr(mnt_idmap(o->path.mnt), o->path.dentry, name, buf, size);
}

ssize_t zk_obj_listxattr(struct zk_obj *o, char *buf, u32 size)
{
	return vfs_listxattr(o->path.dentry, buf, size);
}

/* As setxattr(2) does for an ACL name (do_set_acl): an empty value removes it. */
static int zk_obj_set_acl_xattr(struct zk_obj *o, const char *name, const void *value,
				u32 size)
{
#ifdef CONFIG_FS_POSIX_ACL
	struct posix_acl *acl = NULL;
	int err;

	if (size)
		acl = posix_acl_from_xattr(&init_user_ns, value, size);
	if (IS_ERR(acl))
		return PTR_ERR(acl);
	err = vfs_set_acl(mnt_idmap(o->path.mnt), o->path.dentry, name, acl);
	posix_acl_release(acl);
	return err;
#else
	return -EOPNOTSUPP;
#endif
}

int zk_obj_setxattr(struct zk_obj *o, const char *name, const void *value, u32 size,
		    int flags)
{
	int err = mnt_want_write(o->path.mnt);

	if (err)
		return err;
	if (IS_ENABLED(CONFIG_FS_POSIX_ACL) && is_posix_acl_xattr(name))
		err = zk_obj_set_acl_xattr(o, name, value, size);
	else
		err = vfs_setxattr(mnt_idmap(o->path.mnt), o->path.dentry, name, value, size,
				   flags);
	mnt_drop_write(o->path.mnt);
	return err;
}

int zk_obj_removexattr(struct zk_obj *o, const char *name)
{
	int err = mnt_want_write(o->path.mnt);

	if (err)
		return err;
	if (IS_ENABLED(CONFIG_FS_POSIX_ACL) && is_posix_acl_xattr(name))
		err = vfs_remove_acl(mnt_idmap(o->path.mnt), o->path.dentry, name);
	else
		err = vfs_removexattr(mnt_idmap(o->path.mnt), o->path.dentry, name);
	mnt_drop_write(o->path.mnt);
	return err;
}

int zk_obj_statfs(struct zk_obj *o, struct zk_statfs *out)
{
	struct kstatfs k;
	int err = vfs_statfs(&o->path, &k);

	if (err)
		return err;
	out->kind = k.f_type;
	out->bsize = k.f_bsize;
	out->frsize = k.f_frsize ? k.f_frsize : k.f_bsize;
	out->blocks = k.f_blocks;
	out->bfree = k.f_bfree;
	out->bavail = k.f_bavail;
	out->files = k.f_files;
	out->ffree = k.f_ffree;
	out->namelen = k.f_namelen;
	return 0;
}
