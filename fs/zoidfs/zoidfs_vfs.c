// SPDX-License-Identifier: GPL-2.0
/*
 * zoidfs VFS glue: `mount -t zoidfs` on a CN.  The superblock, inode,
 * dentry, file and address-space operations live here (7.3 has no Rust
 * abstraction for them) and reduce every operation to one call of the
 * Rust side (zoidfs.h, remote.rs), which forwards it to the ION.
 *
 * Caching (mount option cache=, docs/zoidfs.md):
 *  - none: nothing is trusted between calls.  Dentries are revalidated by
 *    a lookup at every walk, attributes are fetched at every stat, reads
 *    and writes go straight to the ION (the page cache holds only what
 *    mmap reads, and writes drop it), so every CN sees every other CN's
 *    completed operations (serial consistency).
 *  - strict: close-to-open.  Reads and writes go through the page cache
 *    (readahead and write-back in rsize/wsize calls); close and fsync
 *    write dirty data back, open revalidates the attributes and drops
 *    cached pages another CN made stale; attributes are trusted for
 *    actimeo seconds, positive dentries for acdirmin (actimeo unless told).
 *  - loose: as strict, but open trusts cached attributes too, and positive
 *    dentries hold for acdirmin seconds (30 unless told, NFS's default).
 * O_DIRECT always goes straight to the ION.  Modelled on fs/9p and fs/nfs.
 *
 * consistency=relaxed (with cache=none): ZOID's relaxed model.  A CN's
 * first open and last close of a file are announced to the ION; the CN
 * that is the file's only opener gets a grant and caches the file as
 * cache=loose would (write-back, reads from the page cache) until its
 * last close or until the ION recalls the grant because another CN opened
 * the file (an upcall: the holder writes back, drops its pages and
 * answers; the second open returns only then).  Without a grant, reads
 * and writes go to the ION as with cache=none.
 *
 * consistency=ssi (with cache=strict|loose): page coherence through ssi
 * containers, Kerrighed's write-invalidate protocol page by page.  Every
 * page of a file has an object in an ssi set (ssi_set=, defined on the
 * ION); a CN caches a page only while it holds the object's copy, reads
 * under a read hold and writes under a write hold, and when the object
 * leaves or is sent, ssi calls back here first: the page is written back
 * (and dropped, if the copy leaves).  A second object per file stands for
 * its size.  Every CN then reads what any CN last wrote, at once, while
 * pages stay cached and written back lazily (docs/zoidfs.md).
 */
#include <linux/backing-dev.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>
#include <linux/writeback.h>
#include <linux/xattr.h>
#include "zoidfs.h"
#include "../../drivers/zoid/zoid_client.h"
#include "../../rust/zoid_kernel/shim/zoid_hooks.h"
#include "../../rust/zoid_kernel/shim/zoid_coherence.h"

/* Bytes of call header, groups and fixed arguments a data call may need. */
#define ZOIDFS_CALL_OVERHEAD 1024
/* Largest transfer per call, whatever the ION allows. */
#define ZOIDFS_MAX_IO (1U << 20)
/* Seconds positive dentries of a cache=loose mount hold (NFS's acdirmin). */
#define ZOIDFS_ACDIRMIN_LOOSE 30

/* Reads or writes one stream keeps in flight (mount option inflight=). */
#define ZOIDFS_INFLIGHT_DEFAULT 4
#define ZOIDFS_INFLIGHT_MAX 16
/* readdir: bytes of entries asked for per call. */
#define ZOIDFS_READDIR_BYTES 16384
/* readdir positions 0 and 1 are "." and ".."; 2 starts the ION's list. */
#define ZOIDFS_DIR_START 2

enum { Cache_none, Cache_strict, Cache_loose };
enum { Consistency_serial, Consistency_relaxed, Consistency_ssi };

/* consistency= values. */
static const struct constant_table zoidfs_consistency_modes[] = {
	{ "serial", Consistency_serial },
	{ "relaxed", Consistency_relaxed },
	{ "ssi", Consistency_ssi },
	{}
};

/* consistency=ssi: the set ssi_set= names unless told otherwise. */
#define ZOIDFS_SSI_SET "zoidfs"
/*
 * Object ids: a file's key (from its ION inode number) in the high 32
 * bits, the page index in the low ones; index ZOIDFS_SSI_SIZE stands for
 * the file's size (and holds the count of its truncations).
 */
#define ZOIDFS_SSI_SIZE 0xffffffffULL
/* zoidfs_inode.ssi_flags: the size object came or went, look again. */
#define ZOIDFS_SSI_STALE 0
/* What the callbacks saw (zoidfs_rs_ssi_count). */
enum { Ssi_insert, Ssi_invalidate, Ssi_export, Ssi_refresh, Ssi_writeback_error };

/* cache= values, indexed by Cache_*. */
static const struct constant_table zoidfs_cache_modes[] = {
	{ "none", Cache_none },
	{ "strict", Cache_strict },
	{ "loose", Cache_loose },
	{}
};

struct zoidfs_sb {
	struct zoidfs_conn conn;
	int cache;		/* Cache_* */
	bool relaxed;		/* consistency=relaxed */
	struct list_head relaxed_sbs;	/* on zoidfs_relaxed_sbs */
	struct super_block *sb;
	unsigned long actimeo;	/* jiffies attributes hold */
	unsigned long acdir;	/* jiffies positive dentries hold */
	struct zoidfs_fh root;
	u32 ion;
	u32 rsize;
	u32 wsize;
	u32 inflight;		/* data calls in flight per stream */
	/*
	 * Bumped whenever one of this CN's writes to any file of the mount
	 * reaches the ION (zoidfs_write_gen()).
	 */
	atomic_t write_gen;
	u32 timeo;		/* mount option, tenths of a second */
	u32 retrans;
	bool hard;
	char *export;
	/* consistency=ssi: the set, and the files that may cache pages. */
	bool ssi;
	struct zoid_coherence_set coh;
	spinlock_t ssi_lock;
	struct list_head ssi_inodes;
	char *ssi_set;
};

/*
 * Writes the ION took unstable (into its page cache, not synced) since the
 * last commit: the write verifier of the first (0: none), whether another
 * came back since, whether one was a direct write (not in the page cache:
 * it cannot be sent again), and the byte range the cached ones cover
 * (lo == hi: none).  See zoidfs_commit().
 */
struct zoidfs_unstable {
	u64 verf;
	bool mixed, direct;
	loff_t lo, hi;
};

/*
 * A file unlinked while open on this CN is renamed instead, as NFS's
 * "silly rename" does (.nfsXXXX): the ION keeps no state for open files,
 * so its inode would go with its last name.  The name is removed when the
 * CN lets go of the inode (the last close).
 */
struct zoidfs_silly {
	struct zoidfs_fh dir;
	u8 len;
	char name[32];
};

struct zoidfs_inode {
	struct zoidfs_fh fh;
	/* When the attributes came from the ION (jiffies). */
	unsigned long attr_time;
	/* Which ACLs the ION said it has then (ZOIDFS_HAS_*ACL). */
	u32 acl;
	/* Whose credentials write dirty pages back (the last writer's). */
	const struct cred *wb_cred;
	/*
	 * Bumped whenever this CN's own write reaches the ION (the size then
	 * is at least what it wrote): attributes a getattr sent before that
	 * brought back may be older than the write, and never shrink the
	 * size (zoidfs_revalidate()), as NFS's attribute generations.
	 */
	atomic_t size_gen;
	/*
	 * consistency=relaxed: opens of this file on this CN and the ION's
	 * grant (0: none; changed under inode_lock too, so a buffered write
	 * sees it stable), both under open_lock.
	 */
	struct mutex open_lock;
	unsigned int opens;
	u32 grant;
	/* The attach to the ION the grant was given under (zoid_client_session()). */
	u32 grant_session;
	/*
	 * consistency=ssi: on zoidfs_sb.ssi_inodes (under ssi_lock), the key
	 * of its objects, ZOIDFS_SSI_STALE, and the truncations seen.
	 */
	struct list_head ssi_link;
	u32 ssi_key;
	unsigned long ssi_flags;
	u64 ssi_truncs;
	/* An open file unlinked on this CN: the name it lives on under. */
	struct zoidfs_silly *silly;
	/* Under i_lock; commit_lock makes fsyncs take turns (zoidfs_commit()). */
	struct zoidfs_unstable unstable;
	struct mutex commit_lock;
	struct inode vfs_inode;
};

/* Superblocks of consistency=relaxed mounts, where recalls look. */
static LIST_HEAD(zoidfs_relaxed_sbs);
static DEFINE_MUTEX(zoidfs_relaxed_lock);
/* Recalls run here (they write back and call the ION). */
static struct workqueue_struct *zoidfs_recall_wq;

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
static const struct file_operations zoidfs_cached_fops;
static const struct file_operations zoidfs_relaxed_fops;
static const struct file_operations zoidfs_ssi_fops;
static const struct address_space_operations zoidfs_aops;
static const struct dentry_operations zoidfs_dentry_ops;

/* ---- Inodes ---- */

/* Whether `inode` has data the ION has not seen yet. */
static bool zoidfs_has_dirty(struct inode *inode)
{
	return mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) ||
		mapping_tagged(inode->i_mapping, PAGECACHE_TAG_WRITEBACK);
}

/*
 * A grant lives as long as the CN's attach to the ION that gave it: an ION
 * that lost this CN (or that this CN lost, which makes the ION lose it
 * too: treenet renews the session) forgot the grant, and may have let
 * another CN write the file since.
 */
static bool zoidfs_grant_void(struct inode *inode)
{
	return READ_ONCE(ZI(inode)->grant) &&
		READ_ONCE(ZI(inode)->grant_session) != zoid_client_session();
}

/*
 * The ACL cache follows the attributes (mount option acl): an object the
 * ION says has no ACL of a kind caches "none" (permission checks then
 * cost no call); one that has one keeps what was fetched while its ctime
 * stays the same (setting an ACL, or a chmod that rewrites its mask,
 * changes the ctime), else fetches it again at the next check.
 */
static void zoidfs_acl_follow(struct inode *inode, const struct zoidfs_attr *a,
			      bool ctime_changed)
{
#ifdef CONFIG_FS_POSIX_ACL
	struct {
		int type;
		u32 flag;
		struct posix_acl *cached;
	} kinds[] = {
		{ ACL_TYPE_ACCESS, ZOIDFS_HAS_ACL, READ_ONCE(inode->i_acl) },
		{ ACL_TYPE_DEFAULT, ZOIDFS_HAS_DEFAULT_ACL, READ_ONCE(inode->i_default_acl) },
	};
	int i;

	if (!IS_POSIXACL(inode) || S_ISLNK(inode->i_mode))
		return;
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (kinds[i].type == ACL_TYPE_DEFAULT && !S_ISDIR(inode->i_mode))
			break;
		if (!(a->acl & kinds[i].flag)) {
			if (kinds[i].cached)
				set_cached_acl(inode, kinds[i].type, NULL);
		} else if (ctime_changed || !kinds[i].cached) {
			forget_cached_acl(inode, kinds[i].type);
		}
	}
#endif
}

/*
 * Brings `inode` up to the ION's attributes.  `ours`: the change is our
 * own write's, so cached pages stay valid.  While dirty data is waiting,
 * the size is ours (at least what we wrote).
 */
static void zoidfs_set_attr_gen(struct inode *inode, const struct zoidfs_attr *a, bool ours,
				bool older)
{
	struct timespec64 mtime = inode_get_mtime(inode);
	struct timespec64 ctime = inode_get_ctime(inode);
	bool dirty, changed;

	/*
	 * i_size writers serialise on i_lock (write_end and truncate too),
	 * and decide against the dirty state under it: a write that grows
	 * the file marks its folio dirty before it grows i_size.
	 */
	spin_lock(&inode->i_lock);
	/* Attributes older than one of our writes: their size is no news. */
	dirty = S_ISREG(inode->i_mode) && (older || zoidfs_has_dirty(inode));
	/* consistency=ssi: cached pages are the objects' business. */
	changed = S_ISREG(inode->i_mode) && !ours && !dirty && !ZSB(inode->i_sb)->ssi &&
		(mtime.tv_sec != a->mtime_sec || mtime.tv_nsec != a->mtime_nsec ||
		 i_size_read(inode) != a->size);
	if (!dirty || a->size > i_size_read(inode))
		i_size_write(inode, a->size);
	if (ours) {
		atomic_inc(&ZI(inode)->size_gen);
		atomic_inc(&ZSB(inode->i_sb)->write_gen);
	}
	spin_unlock(&inode->i_lock);

	inode->i_mode = (inode->i_mode & S_IFMT) | (a->mode & ~S_IFMT);
	/* A silly-renamed file's hidden name is no link of its users'. */
	set_nlink(inode, ZI(inode)->silly && a->nlink ? a->nlink - 1 : a->nlink);
	inode->i_uid = make_kuid(&init_user_ns, a->uid);
	inode->i_gid = make_kgid(&init_user_ns, a->gid);
	inode->i_blocks = a->blocks;
	ZI(inode)->attr_time = jiffies;
	inode_set_atime(inode, a->atime_sec, a->atime_nsec);
	inode_set_mtime(inode, a->mtime_sec, a->mtime_nsec);
	inode_set_ctime(inode, a->ctime_sec, a->ctime_nsec);
	ZI(inode)->acl = a->acl;
	zoidfs_acl_follow(inode, a, ctime.tv_sec != a->ctime_sec ||
			  ctime.tv_nsec != a->ctime_nsec);
	/* Someone changed the file: what mmap cached is stale. */
	if (changed && inode->i_mapping->nrpages)
		invalidate_mapping_pages(inode->i_mapping, 0, -1);
}

static void zoidfs_set_attr(struct inode *inode, const struct zoidfs_attr *a, bool ours)
{
	zoidfs_set_attr_gen(inode, a, ours, false);
}

/*
 * The mount's write generation, read before a call whose reply carries
 * attributes: if one of this CN's writes reached the ION while the call
 * was out, the ION may have taken the attributes before that write (its
 * workers run in parallel), and their size is no news: it must not
 * shrink the file back under a concurrent append's record, which the next
 * append would then overwrite.  NFS's attribute generations do the same.
 */
static int zoidfs_write_gen(struct super_block *sb)
{
	return atomic_read(&ZSB(sb)->write_gen);
}

/* Applies a reply's attributes; `gen`: zoidfs_write_gen() before the call. */
static void zoidfs_apply_attr(struct inode *inode, const struct zoidfs_attr *a, int gen)
{
	zoidfs_set_attr_gen(inode, a, false, zoidfs_write_gen(inode->i_sb) != gen);
}

/*
 * After the ION booted again, the handle of a file (not a directory) under
 * an export that is a subdirectory is stale until the ION's dcache knows
 * the file's path again (docs/zoidfs.md, "Handles").  Looking the file's
 * name up in its parent directory, whose handle the ION always resolves,
 * teaches it that path.  0 when the ION answered with the inode's own
 * handle (the same file), and a call that failed with ESTALE is worth one
 * more try; -ESTALE otherwise (a directory, a file with no name here, or
 * a name that is gone or names another file now).
 */
static int zoidfs_reconnect(struct inode *inode)
{
	const struct zoidfs_fh *mine = &ZI(inode)->fh;
	struct zoidfs_fh *dir, fh;
	struct dentry *alias;
	struct zoidfs_attr a;
	unsigned int len = 0;
	bool named = false;
	char *name;
	int err;

	if (S_ISDIR(inode->i_mode))
		return -ESTALE;
	/*
	 * A name and its parent's handle, copied under the locks: no dentry
	 * reference, whose dput could be the last iput of an unlinked file
	 * and wait for the very writeback (I_SYNC) that called us.
	 */
	name = kmalloc(NAME_MAX + 1 + sizeof(*dir), GFP_NOFS);
	if (!name)
		return -ESTALE;
	dir = (struct zoidfs_fh *)(name + NAME_MAX + 1);
	spin_lock(&inode->i_lock);
	hlist_for_each_entry(alias, &inode->i_dentry, d_alias) {
		spin_lock(&alias->d_lock);
		if (!d_unhashed(alias) && !IS_ROOT(alias) && alias->d_name.len <= NAME_MAX) {
			len = alias->d_name.len;
			memcpy(name, alias->d_name.name, len);
			/* d_parent holds still under the child's d_lock. */
			*dir = ZI(d_inode(alias->d_parent))->fh;
			named = true;
		}
		spin_unlock(&alias->d_lock);
		if (named)
			break;
	}
	spin_unlock(&inode->i_lock);
	err = -ESTALE;
	if (named && !zoidfs_rs_lookup(zconn(inode), dir, name, len, &fh, &a) &&
	    fh.len == mine->len && !memcmp(fh.data, mine->data, fh.len))
		err = 0;
	kfree(name);
	zoidfs_rs_count_reconnect(!err);
	return err;
}

/* `call` (on `inode`'s handle), once more if its handle was reconnected. */
#define zoidfs_stale_retry(inode, call) ({				\
	typeof(call) __ret = (call);					\
									\
	if (__ret == -ESTALE && !zoidfs_reconnect(inode))		\
		__ret = (call);						\
	__ret;								\
})

/* Fetches the attributes unless the cached ones are fresh (`force`: always). */
static int zoidfs_revalidate(struct inode *inode, bool force)
{
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	struct zoidfs_attr a;
	int gen, err;

	if (!force && sbi->cache != Cache_none &&
	    time_before(jiffies, ZI(inode)->attr_time + sbi->actimeo))
		return 0;
	gen = atomic_read(&ZI(inode)->size_gen);
	err = zoidfs_stale_retry(inode, zoidfs_rs_getattr(&sbi->conn, &ZI(inode)->fh, &a));
	if (!err)
		zoidfs_set_attr_gen(inode, &a, false, atomic_read(&ZI(inode)->size_gen) != gen);
	return err;
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

/*
 * Large folios, up to the largest that fits one read and one write call
 * (a whole call's worth of pages is then one folio to allocate, dirty,
 * write back and read ahead, as NFS does): except with consistency=ssi,
 * where each page is its own object.
 */
static void zoidfs_set_folio_orders(struct inode *inode)
{
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	u32 io = min(sbi->rsize, sbi->wsize);

	if (!sbi->ssi && io >= 2 * PAGE_SIZE)
		mapping_set_folio_order_range(inode->i_mapping, 0, ilog2(io / PAGE_SIZE));
}

/* The inode of `fh` (new or cached), with attributes `a`. */
static struct inode *zoidfs_iget(struct super_block *sb, struct zoidfs_fh *fh,
				 const struct zoidfs_attr *a, int gen)
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
		zoidfs_apply_attr(inode, a, gen);
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
		if (ZSB(sb)->relaxed)
			inode->i_fop = &zoidfs_relaxed_fops;
		else if (ZSB(sb)->ssi)
			inode->i_fop = &zoidfs_ssi_fops;
		else if (ZSB(sb)->cache == Cache_none)
			inode->i_fop = &zoidfs_file_fops;
		else
			inode->i_fop = &zoidfs_cached_fops;
		inode->i_mapping->a_ops = &zoidfs_aops;
		zoidfs_set_folio_orders(inode);
		break;
	case S_IFLNK:
		inode->i_op = &zoidfs_symlink_iops;
		break;
	default:
		inode->i_op = &zoidfs_file_iops;
		init_special_inode(inode, a->mode, new_decode_dev(a->rdev));
		break;
	}
	zoidfs_apply_attr(inode, a, gen);
	if (S_ISREG(inode->i_mode) && ZSB(sb)->ssi) {
		/* Its objects' key, and where ssi's callbacks find it. */
		ZI(inode)->ssi_key = (u32)(a->ino ^ (a->ino >> 32));
		spin_lock(&ZSB(sb)->ssi_lock);
		list_add(&ZI(inode)->ssi_link, &ZSB(sb)->ssi_inodes);
		spin_unlock(&ZSB(sb)->ssi_lock);
	}
	unlock_new_inode(inode);
	return inode;
}

static struct inode *zoidfs_alloc_inode(struct super_block *sb)
{
	struct zoidfs_inode *zi = alloc_inode_sb(sb, zoidfs_inode_cache, GFP_KERNEL);

	if (!zi)
		return NULL;
	zi->fh.len = 0;
	zi->attr_time = 0;
	atomic_set(&zi->size_gen, 0);
	zi->acl = 0;
	zi->wb_cred = NULL;
	zi->opens = 0;
	zi->grant = 0;
	INIT_LIST_HEAD(&zi->ssi_link);
	zi->ssi_key = 0;
	/* Whatever the size object says is news to a new inode. */
	zi->ssi_flags = BIT(ZOIDFS_SSI_STALE);
	zi->ssi_truncs = 0;
	zi->unstable = (struct zoidfs_unstable){};
	zi->silly = NULL;
	return &zi->vfs_inode;
}

static void zoidfs_evict_inode(struct inode *inode)
{
	struct zoidfs_inode *zi = ZI(inode);

	if (!list_empty(&zi->ssi_link)) {
		spin_lock(&ZSB(inode->i_sb)->ssi_lock);
		list_del_init(&zi->ssi_link);
		spin_unlock(&ZSB(inode->i_sb)->ssi_lock);
	}
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (zi->silly) {
		/* Failure (an ION gone) leaves the name, as NFS leaves .nfsXXXX. */
		zoidfs_rs_remove(zconn(inode), &zi->silly->dir, zi->silly->name, zi->silly->len,
				 false);
		kfree(zi->silly);
		zi->silly = NULL;
	}
	if (zi->wb_cred) {
		put_cred(zi->wb_cred);
		zi->wb_cred = NULL;
	}
}

/* A silly-renamed inode goes as soon as its last user does. */
static int zoidfs_drop_inode(struct inode *inode)
{
	return ZI(inode)->silly ? 1 : inode_generic_drop(inode);
}

static void zoidfs_free_inode(struct inode *inode)
{
	kmem_cache_free(zoidfs_inode_cache, ZI(inode));
}

static void zoidfs_inode_init_once(void *p)
{
	struct zoidfs_inode *zi = p;

	inode_init_once(&zi->vfs_inode);
	mutex_init(&zi->open_lock);
	mutex_init(&zi->commit_lock);
}

/* ---- Names ---- */

/* Looks `dentry` up in `dir` on the ION: its inode, NULL if there is none. */
static struct inode *zoidfs_lookup_inode(struct inode *dir, const struct qstr *name)
{
	int gen = zoidfs_write_gen(dir->i_sb);
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	err = zoidfs_rs_lookup(zconn(dir), &ZI(dir)->fh, name->name, name->len, &fh, &a);
	if (err == -ENOENT)
		return NULL;
	if (err)
		return ERR_PTR(err);
	return zoidfs_iget(dir->i_sb, &fh, &a, gen);
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
	dentry->d_time = jiffies;
	return d_splice_alias(inode, dentry);
}

/*
 * cache=none: a dentry holds until the next walk, which asks the ION
 * again.  strict and loose: positive dentries hold for acdirmin (strict:
 * actimeo unless told).  Negative dentries are never trusted (another CN
 * may have made the name), nor any dentry of a walk the VFS repeats with
 * LOOKUP_REVAL (an operation on the inode found met ESTALE: the file the
 * name led to is gone from the ION), nor one an exclusive create would
 * fail on (LOOKUP_EXCL: O_EXCL, mkdir, mknod, symlink, link's target; a
 * name another CN removed must not give EEXIST), as NFS does.
 */
static int zoidfs_d_revalidate(struct inode *dir, const struct qstr *name,
			       struct dentry *dentry, unsigned int flags)
{
	struct zoidfs_sb *sbi = ZSB(dir->i_sb);
	struct inode *inode, *found;

	inode = d_inode_rcu(dentry);
	if (!inode)
		return 0;
	if (sbi->cache != Cache_none && !(flags & (LOOKUP_REVAL | LOOKUP_EXCL)) &&
	    time_before(jiffies, READ_ONCE(dentry->d_time) + sbi->acdir))
		return 1;
	if (flags & LOOKUP_RCU)
		return -ECHILD;
	found = zoidfs_lookup_inode(dir, name);
	if (IS_ERR(found))
		return PTR_ERR(found) == -ESTALE ? 0 : PTR_ERR(found);
	if (!found)
		return 0;
	iput(found);
	/* Same handle, same inode (iget5 found it); otherwise replaced. */
	if (found != inode)
		return 0;
	WRITE_ONCE(dentry->d_time, jiffies);
	return 1;
}

static const struct dentry_operations zoidfs_dentry_ops = {
	.d_revalidate = zoidfs_d_revalidate,
};

/*
 * Gives `dentry` the inode of a just-made object (`gen`: as for
 * zoidfs_apply_attr(); a create may have found the file there).
 */
static int zoidfs_instantiate(struct inode *dir, struct dentry *dentry,
			      struct zoidfs_fh *fh, const struct zoidfs_attr *a, int gen)
{
	struct inode *inode = zoidfs_iget(dir->i_sb, fh, a, gen);

	if (IS_ERR(inode))
		return PTR_ERR(inode);
	dentry->d_time = jiffies;
	/* A dentry still being looked up goes into the dcache with it. */
	if (d_in_lookup(dentry))
		d_add(dentry, inode);
	else
		d_instantiate(dentry, inode);
	return 0;
}

/*
 * The ION changed the inode's attributes as a side effect (a directory's
 * times and links after a create or removal in it, a renamed or unlinked
 * file's ctime): the next getattr fetches them whatever actimeo says, as
 * NFS's attribute cache is invalidated.  No call now: most are never
 * looked at.
 */
static void zoidfs_attr_stale(struct inode *inode)
{
	ZI(inode)->attr_time = jiffies - ZSB(inode->i_sb)->actimeo - 1;
}

/*
 * The mode a new object is asked for.  With ACLs on (SB_POSIXACL) the VFS
 * leaves the umask to us: it applies unless the directory has a default
 * ACL, which the ION's filesystem applies instead (POSIX 1003.1e).
 */
static umode_t zoidfs_new_mode(struct inode *dir, umode_t mode)
{
	if (IS_POSIXACL(dir) && !(READ_ONCE(ZI(dir)->acl) & ZOIDFS_HAS_DEFAULT_ACL))
		mode &= ~current_umask();
	return mode;
}

/*
 * Creates a file for `dentry` (also one the VFS is still looking up: one
 * call where a lookup would have been the first of two).  *created (if
 * given) says whether the ION made it, even if no inode came of it here.
 */
static int zoidfs_do_create(struct inode *dir, struct dentry *dentry, umode_t mode,
			    bool excl, bool *created)
{
	int gen = zoidfs_write_gen(dir->i_sb);
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err;

	mode = zoidfs_new_mode(dir, mode);
	err = zoidfs_rs_create(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			       dentry->d_name.len, mode & 07777, excl, &fh, &a);
	if (err)
		return err;
	if (created)
		*created = true;
	zoidfs_attr_stale(dir);
	return zoidfs_instantiate(dir, dentry, &fh, &a, gen);
}

static int zoidfs_create(struct mnt_idmap *idmap, struct inode *dir,
			 struct dentry *dentry, umode_t mode)
{
	return zoidfs_do_create(dir, dentry, mode, true, NULL);
}

/*
 * open(O_CREAT) in one step: O_EXCL is decided by the ION (exclusive
 * across CNs); a file another CN created since our lookup is opened as
 * it is (and truncated by the VFS for O_TRUNC).  A name not in the dcache
 * is created at once, exclusively; only if that fails (it exists, or the
 * ION refused) does the lookup come first, so that an existing file or
 * symlink is opened, and errors come in open(2)'s order, as before.
 */
static int zoidfs_atomic_open(struct inode *dir, struct dentry *dentry,
			      struct file *file, unsigned int flags, umode_t mode)
{
	bool created = false;
	struct inode *inode;
	int err;

	if (d_in_lookup(dentry) && (flags & O_CREAT)) {
		err = zoidfs_do_create(dir, dentry, mode, true, &created);
		if (!err) {
			file->f_mode |= FMODE_CREATED;
			return finish_open(file, dentry, NULL);
		}
		/* Created, but no inode for it here: as below. */
		if (created)
			return err;
	}
	if (d_in_lookup(dentry)) {
		struct dentry *res = zoidfs_lookup(dir, dentry, 0);

		if (IS_ERR(res))
			return PTR_ERR(res);
		if (res || d_really_is_positive(dentry))
			return finish_no_open(file, res);
	}
	if (!(flags & O_CREAT))
		return finish_no_open(file, NULL);
	err = zoidfs_do_create(dir, dentry, mode, true, NULL);
	if (err == -EEXIST && !(flags & O_EXCL)) {
		inode = zoidfs_lookup_inode(dir, &dentry->d_name);
		if (IS_ERR_OR_NULL(inode))
			return inode ? PTR_ERR(inode) : -ENOENT;
		/* A directory must not get a second dentry: as open(2) says. */
		if (S_ISDIR(inode->i_mode)) {
			iput(inode);
			return -EISDIR;
		}
		dentry->d_time = jiffies;
		d_instantiate(dentry, inode);
		return finish_no_open(file, NULL);
	}
	if (err)
		return err;
	file->f_mode |= FMODE_CREATED;
	/* NULL: the inode's own ->open runs (FMODE_CAN_ODIRECT, revalidation). */
	return finish_open(file, dentry, NULL);
}

static struct dentry *zoidfs_mkdir(struct mnt_idmap *idmap, struct inode *dir,
				   struct dentry *dentry, umode_t mode)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err, gen;

	gen = zoidfs_write_gen(dir->i_sb);
	mode = zoidfs_new_mode(dir, mode);
	err = zoidfs_rs_mkdir(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			      dentry->d_name.len, mode & 07777, &fh, &a);
	if (!err)
		err = zoidfs_instantiate(dir, dentry, &fh, &a, gen);
	if (!err)
		zoidfs_attr_stale(dir);
	return ERR_PTR(err);
}

static int zoidfs_symlink(struct mnt_idmap *idmap, struct inode *dir,
			  struct dentry *dentry, const char *target)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err, gen;

	gen = zoidfs_write_gen(dir->i_sb);
	err = zoidfs_rs_symlink(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				dentry->d_name.len, target, strlen(target), &fh, &a);
	if (err)
		return err;
	zoidfs_attr_stale(dir);
	return zoidfs_instantiate(dir, dentry, &fh, &a, gen);
}

/* Fifos, sockets and devices: objects on the ION, opened locally (as NFS). */
static int zoidfs_mknod(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode, dev_t rdev)
{
	struct zoidfs_fh fh;
	struct zoidfs_attr a;
	int err, gen;

	gen = zoidfs_write_gen(dir->i_sb);
	mode = zoidfs_new_mode(dir, mode);
	err = zoidfs_rs_mknod(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			      dentry->d_name.len, mode & (S_IFMT | 07777),
			      new_encode_dev(rdev), &fh, &a);
	if (err)
		return err;
	zoidfs_attr_stale(dir);
	return zoidfs_instantiate(dir, dentry, &fh, &a, gen);
}

static int zoidfs_link(struct dentry *old, struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(old);
	int gen = zoidfs_write_gen(dir->i_sb);
	struct zoidfs_attr a;
	int err;

	err = zoidfs_stale_retry(inode, zoidfs_rs_link(zconn(dir), &ZI(inode)->fh, &ZI(dir)->fh,
						       dentry->d_name.name, dentry->d_name.len,
						       &a));
	if (err)
		return err;
	zoidfs_apply_attr(inode, &a, gen);
	zoidfs_attr_stale(dir);
	ihold(inode);
	dentry->d_time = jiffies;
	d_instantiate(dentry, inode);
	return 0;
}

/*
 * `dentry`'s file is open here (someone holds its dentry besides the
 * `held` references of the caller, as NFS decides: 1 in unlink, 2 in
 * rename): rename it to a hidden name in its directory rather than remove
 * it, and remove that when the inode goes (zoidfs_evict_inode).  A file
 * already so renamed once has a name left on the ION: this one can go.
 */
static bool zoidfs_needs_silly(struct dentry *dentry, unsigned int held)
{
	struct inode *inode = d_inode(dentry);

	return d_count(dentry) > held && S_ISREG(inode->i_mode) && !ZI(inode)->silly;
}

/*
 * One link fewer.  The cached count may be behind the ION's (another CN
 * linked or unlinked names since): never below zero.
 */
static void zoidfs_drop_nlink(struct inode *inode)
{
	if (inode->i_nlink)
		drop_nlink(inode);
}

static int zoidfs_silly_rename(struct inode *dir, struct dentry *dentry)
{
	static atomic_t serial = ATOMIC_INIT(0);
	struct inode *inode = d_inode(dentry);
	struct zoidfs_silly *silly;
	int err;

	silly = kmalloc(sizeof(*silly), GFP_KERNEL);
	if (!silly)
		return -ENOMEM;
	silly->dir = ZI(dir)->fh;
	silly->len = scnprintf(silly->name, sizeof(silly->name), ".zoidfs%016llx%08x",
			       (u64)inode->i_ino, (u32)atomic_inc_return(&serial));
	err = zoidfs_rs_rename(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
			       dentry->d_name.len, &ZI(dir)->fh, silly->name, silly->len,
			       RENAME_NOREPLACE);
	if (err) {
		kfree(silly);
		return err;
	}
	ZI(inode)->silly = silly;
	return 0;
}

static int zoidfs_unlink(struct inode *dir, struct dentry *dentry)
{
	int err;

	if (zoidfs_needs_silly(dentry, 1))
		err = zoidfs_silly_rename(dir, dentry);
	else
		err = zoidfs_rs_remove(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				       dentry->d_name.len, false);
	if (!err) {
		zoidfs_drop_nlink(d_inode(dentry));
		zoidfs_attr_stale(d_inode(dentry));
		zoidfs_attr_stale(dir);
	} else if (err == -ENOENT) {
		/* Gone on the ION already (another CN): no walk finds it here. */
		d_drop(dentry);
	}
	return err;
}

static int zoidfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	int err = zoidfs_rs_remove(zconn(dir), &ZI(dir)->fh, dentry->d_name.name,
				   dentry->d_name.len, true);

	if (!err) {
		clear_nlink(d_inode(dentry));
		zoidfs_attr_stale(dir);
	} else if (err == -ENOENT) {
		d_drop(dentry);
	}
	return err;
}

static int zoidfs_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			 struct dentry *old, struct inode *new_dir, struct dentry *new,
			 unsigned int flags)
{
	struct inode *target = d_inode(new);
	bool moved;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	/* A file replaced while open here keeps its data, as an unlinked one. */
	moved = target && !(flags & RENAME_EXCHANGE) && zoidfs_needs_silly(new, 2);
	if (moved) {
		err = zoidfs_silly_rename(new_dir, new);
		if (err)
			return err;
	}
	err = zoidfs_rs_rename(zconn(old_dir), &ZI(old_dir)->fh, old->d_name.name,
			       old->d_name.len, &ZI(new_dir)->fh, new->d_name.name,
			       new->d_name.len, flags);
	if (err) {
		struct zoidfs_silly *silly = moved ? ZI(target)->silly : NULL;

		/* The target back under its name, if it was moved just now. */
		if (silly && !zoidfs_rs_rename(zconn(new_dir), &silly->dir, silly->name, silly->len,
					       &silly->dir, new->d_name.name, new->d_name.len,
					       RENAME_NOREPLACE)) {
			ZI(target)->silly = NULL;
			kfree(silly);
		}
		return err;
	}
	if (target && !(flags & RENAME_EXCHANGE)) {
		if (S_ISDIR(target->i_mode))
			clear_nlink(target);
		else
			zoidfs_drop_nlink(target);
	}
	/* Both directories' times, and the moved inodes' ctimes, changed. */
	zoidfs_attr_stale(old_dir);
	zoidfs_attr_stale(new_dir);
	zoidfs_attr_stale(d_inode(old));
	if (target)
		zoidfs_attr_stale(target);
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
	n = zoidfs_stale_retry(inode, zoidfs_rs_readlink(zconn(inode), &ZI(inode)->fh, buf,
							  PATH_MAX - 1));
	if (n < 0) {
		kfree(buf);
		return ERR_PTR(n);
	}
	buf[n] = 0;
	set_delayed_call(done, kfree_link, buf);
	return buf;
}

/* ---- Attributes ---- */

static int zoidfs_ssi_hold_size(struct inode *inode, bool write);
static void zoidfs_ssi_unhold_size(struct inode *inode);
static int zoidfs_ssi_truncate(struct mnt_idmap *idmap, struct dentry *dentry,
			       struct iattr *ia);

static int zoidfs_getattr(struct mnt_idmap *idmap, const struct path *path,
			  struct kstat *stat, u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	bool force = (flags & AT_STATX_SYNC_TYPE) == AT_STATX_FORCE_SYNC;
	int err;

	if ((flags & AT_STATX_SYNC_TYPE) != AT_STATX_DONT_SYNC && S_ISREG(inode->i_mode) &&
	    ZSB(inode->i_sb)->ssi) {
		/* consistency=ssi: the size as the CN that last changed it has it. */
		err = zoidfs_ssi_hold_size(inode, false);
		if (err)
			return err;
		zoidfs_ssi_unhold_size(inode);
	}
	if ((flags & AT_STATX_SYNC_TYPE) != AT_STATX_DONT_SYNC) {
		/* Size and mtime as the ION will have them: write back first. */
		if (S_ISREG(inode->i_mode) && zoidfs_has_dirty(inode)) {
			err = filemap_write_and_wait(inode->i_mapping);
			if (err)
				return err;
			force = true;
		}
		err = zoidfs_revalidate(inode, force);
		if (err)
			return err;
	}
	generic_fillattr(idmap, request_mask, inode, stat);
	return 0;
}

/* setattr, whatever the consistency. */
static int zoidfs_do_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			     struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	struct zoidfs_setattr s = {};
	struct zoidfs_attr a;
	int err, gen;

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
	/*
	 * Cached writes first: write-back after the call would undo a
	 * truncate or the times just set.
	 */
	if (S_ISREG(inode->i_mode) && zoidfs_has_dirty(inode)) {
		err = filemap_write_and_wait(inode->i_mapping);
		if (err)
			return err;
	}
	gen = zoidfs_write_gen(inode->i_sb);
	err = zoidfs_stale_retry(inode, zoidfs_rs_setattr(zconn(inode), &ZI(inode)->fh, &s, &a));
	if (err)
		return err;
	if (ia->ia_valid & ATTR_SIZE) {
		/* The new size first, then the page cache (truncate_pagecache). */
		spin_lock(&inode->i_lock);
		i_size_write(inode, ia->ia_size);
		/* What the truncation removed is not to be sent again. */
		ZI(inode)->unstable.hi = min(ZI(inode)->unstable.hi, ia->ia_size);
		ZI(inode)->unstable.lo = min(ZI(inode)->unstable.lo, ZI(inode)->unstable.hi);
		spin_unlock(&inode->i_lock);
		truncate_pagecache(inode, ia->ia_size);
	}
	zoidfs_apply_attr(inode, &a, gen);
	return 0;
}

static int zoidfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			  struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);

	if ((ia->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode) && ZSB(inode->i_sb)->ssi)
		return zoidfs_ssi_truncate(idmap, dentry, ia);
	return zoidfs_do_setattr(idmap, dentry, ia);
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
	zoid_hook(zoidfs_open, inode->i_ino, file->f_flags);
	file->f_mode |= FMODE_CAN_ODIRECT;
	return generic_file_open(inode, file);
}

/*
 * Data calls in flight, oldest first: a ring of up to ZOIDFS_INFLIGHT_MAX
 * started reads or writes, each with its offset and length.
 */
struct zoidfs_pipe {
	struct zoidfs_io *io[ZOIDFS_INFLIGHT_MAX];
	loff_t pos[ZOIDFS_INFLIGHT_MAX];
	size_t len[ZOIDFS_INFLIGHT_MAX];
	unsigned int depth;	/* at most this many in flight */
	unsigned int first;	/* slot of the oldest */
	unsigned int n;		/* in flight */
};

static void zoidfs_pipe_init(struct zoidfs_pipe *p, unsigned int depth)
{
	p->depth = clamp_t(unsigned int, depth, 1, ZOIDFS_INFLIGHT_MAX);
	p->first = 0;
	p->n = 0;
}

static bool zoidfs_pipe_full(const struct zoidfs_pipe *p)
{
	return p->n == p->depth;
}

/* The slot the next started call takes. */
static unsigned int zoidfs_pipe_next(const struct zoidfs_pipe *p)
{
	return (p->first + p->n) % p->depth;
}

static void zoidfs_pipe_push(struct zoidfs_pipe *p, struct zoidfs_io *io, loff_t pos, size_t len)
{
	unsigned int s = zoidfs_pipe_next(p);

	p->io[s] = io;
	p->pos[s] = pos;
	p->len[s] = len;
	p->n++;
}

/* Takes the oldest call out: its slot. */
static unsigned int zoidfs_pipe_pop(struct zoidfs_pipe *p)
{
	unsigned int s = p->first;

	p->first = (p->first + 1) % p->depth;
	p->n--;
	return s;
}

/* How many calls a transfer of `count` bytes in `chunk`s keeps in flight. */
static unsigned int zoidfs_depth(struct zoidfs_sb *sbi, size_t count, size_t chunk)
{
	return min_t(size_t, sbi->inflight, DIV_ROUND_UP(count, chunk));
}

static ssize_t zoidfs_read_iter_once(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	size_t count = iov_iter_count(to);
	size_t chunk = min_t(size_t, count, sbi->rsize);
	loff_t next = iocb->ki_pos, end = iocb->ki_pos + count;
	/* stop: start no more reads; broken: and use no more results. */
	bool stop = false, broken = false;
	ssize_t done = 0, err = 0, n;
	struct zoidfs_pipe p;
	void *buf;

	if (!count)
		return 0;
	if (zoidfs_has_dirty(inode)) {
		n = filemap_write_and_wait_range(inode->i_mapping, iocb->ki_pos,
						 iocb->ki_pos + count - 1);
		if (n)
			return n;
	}
	/* Up to `inflight` rsize reads on the wire, consumed in order. */
	zoidfs_pipe_init(&p, zoidfs_depth(sbi, count, chunk));
	buf = kvmalloc(array_size(p.depth, chunk), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		unsigned int s;

		while (!stop && !zoidfs_pipe_full(&p) && next < end) {
			size_t want = min_t(size_t, end - next, chunk);
			struct zoidfs_io *io;

			s = zoidfs_pipe_next(&p);
			err = zoidfs_rs_read_start(&sbi->conn, &ZI(inode)->fh, next,
						   buf + s * chunk, want, &io);
			if (err) {
				stop = true;
				break;
			}
			zoidfs_pipe_push(&p, io, next, want);
			next += want;
		}
		if (!p.n)
			break;
		s = zoidfs_pipe_pop(&p);
		n = zoidfs_rs_read_finish(p.io[s]);
		if (broken)
			continue;	/* draining after the end or an error */
		if (n >= 0 && copy_to_iter(buf + s * chunk, n, to) != n)
			n = -EFAULT;
		if (n < 0) {
			err = n;
			stop = broken = true;
			continue;
		}
		iocb->ki_pos += n;
		done += n;
		if (n < p.len[s])
			stop = broken = true;	/* the end of the file */
	}
	kvfree(buf);
	return done ? done : err;
}

/*
 * Unstable writes and the write verifier, as NFS's.  The ION answers a
 * write once the data is in its page cache, and a commit (fsync) once it is
 * on stable storage; both answers carry its write verifier, which changes
 * when the ION boots again.  A CN whose unstable writes went to another
 * verifier than the commit's (the ION crashed in between and lost them
 * with its page cache) must not acknowledge the fsync: it sends them again
 * from its page cache and commits again.
 */

/* Merges `u` into the inode's record `r`, under i_lock. */
static void zoidfs_merge_unstable(struct zoidfs_unstable *r, const struct zoidfs_unstable *u)
{
	if (!r->verf) {
		*r = *u;
		return;
	}
	r->mixed |= u->mixed || r->verf != u->verf;
	r->direct |= u->direct;
	if (r->lo == r->hi) {
		r->lo = u->lo;
		r->hi = u->hi;
	} else if (u->lo != u->hi) {
		r->lo = min(r->lo, u->lo);
		r->hi = max(r->hi, u->hi);
	}
}

/*
 * A write the ION took unstable: remember it for the next commit.  `pos`
 * < 0: a direct write (not cached here, so it cannot be sent again).
 */
static void zoidfs_note_unstable(struct inode *inode, u64 verf, loff_t pos, size_t len)
{
	struct zoidfs_unstable u = {
		.verf = verf,
		.direct = pos < 0,
		.lo = pos < 0 ? 0 : pos,
		.hi = pos < 0 ? 0 : pos + len,
	};

	spin_lock(&inode->i_lock);
	zoidfs_merge_unstable(&ZI(inode)->unstable, &u);
	spin_unlock(&inode->i_lock);
	/* For zoidfs_write_inode: sync(2), umount, and no eviction before. */
	mark_inode_dirty_sync(inode);
}

/* Takes what the next commit is to cover; later writes wait for the one after. */
static struct zoidfs_unstable zoidfs_take_unstable(struct inode *inode)
{
	struct zoidfs_unstable u;

	spin_lock(&inode->i_lock);
	u = ZI(inode)->unstable;
	ZI(inode)->unstable = (struct zoidfs_unstable){};
	spin_unlock(&inode->i_lock);
	return u;
}

/* Puts back what a failed commit did not cover (merged with newer writes). */
static void zoidfs_keep_unstable(struct inode *inode, const struct zoidfs_unstable *u)
{
	if (!u->verf)
		return;
	spin_lock(&inode->i_lock);
	zoidfs_merge_unstable(&ZI(inode)->unstable, u);
	spin_unlock(&inode->i_lock);
	mark_inode_dirty_sync(inode);
}

/*
 * Dirties the cached folios of [lo, hi) again and writes them back (to the
 * ION that answers now).  -EIO if part of the range is no longer cached,
 * or lies beyond the end of the file as this CN now knows it (the rebooted
 * ION's size): that data cannot be sent again.
 */
static int zoidfs_resend_unstable(struct inode *inode, loff_t lo, loff_t hi)
{
	struct address_space *mapping = inode->i_mapping;
	pgoff_t index, last;

	if (hi <= lo)
		return 0;
	if (lo < 0 || hi > i_size_read(inode))
		return -EIO;
	index = lo >> PAGE_SHIFT;
	last = (hi - 1) >> PAGE_SHIFT;
	while (index <= last) {
		struct folio *folio = filemap_lock_folio(mapping, index);
		bool cached;

		if (IS_ERR(folio))
			return -EIO;
		cached = folio_test_uptodate(folio);
		if (cached)
			folio_mark_dirty(folio);
		index = folio_next_index(folio);
		folio_unlock(folio);
		folio_put(folio);
		if (!cached)
			return -EIO;
		cond_resched();
	}
	return filemap_write_and_wait_range(mapping, lo, hi - 1);
}

/*
 * fsync's commit, checking the write verifier (see above).  One at a time
 * per inode: a second fsync must not return while the first is still
 * sending again what the first commit found lost.
 */
static int zoidfs_commit(struct inode *inode, int datasync)
{
	struct zoidfs_inode *zi = ZI(inode);
	int tries, err = 0;

	mutex_lock(&zi->commit_lock);
	for (tries = 0;; tries++) {
		struct zoidfs_unstable u = zoidfs_take_unstable(inode);
		u64 verf = 0;

		err = zoidfs_stale_retry(inode, zoidfs_rs_commit(zconn(inode), &zi->fh, datasync,
								 &verf));
		if (err) {
			/*
			 * Not committed: the next commit covers them; unless the
			 * file is gone on the ION (stale even by its name), and
			 * its unsynced writes with it.
			 */
			if (err != -ESTALE)
				zoidfs_keep_unstable(inode, &u);
			break;
		}
		if (!u.verf || (!u.mixed && u.verf == verf))
			break;
		/*
		 * The ION booted again since it took some of these writes: send
		 * them again (noted under its new verifier, so the next round
		 * commits and checks them).  An ION that keeps rebooting gets a
		 * few rounds.
		 */
		err = tries < 3 && !u.direct ? zoidfs_resend_unstable(inode, u.lo, u.hi) : -EIO;
		zoidfs_rs_count_unstable(err != 0);
		if (err) {
			pr_warn_ratelimited("zoidfs: inode %llu: the ION booted again before its writes were synced (%scached bytes %lld..%lld), and they cannot be sent again: fsync fails (%d)\n",
					    (unsigned long long)inode->i_ino,
					    u.direct ? "direct writes, " : "", u.lo, u.hi, err);
			mapping_set_error(inode->i_mapping, err);
			break;
		}
	}
	mutex_unlock(&zi->commit_lock);
	return err;
}

/*
 * Remembers whose credentials write the dirty pages back and commit the
 * unstable writes (the flusher has none of its own).
 */
static void zoidfs_note_writer(struct inode *inode)
{
	struct zoidfs_inode *zi = ZI(inode);
	const struct cred *old = NULL, *mine = current_cred();

	if (READ_ONCE(zi->wb_cred) == mine)
		return;
	get_cred(mine);
	spin_lock(&inode->i_lock);
	old = zi->wb_cred;
	zi->wb_cred = mine;
	spin_unlock(&inode->i_lock);
	if (old)
		put_cred(old);
}

/*
 * Write-back of the inode itself, which unstable writes dirty: sync(2),
 * syncfs and umount (WB_SYNC_ALL) commit them, and so does the periodic
 * flusher once the inode has been dirty a while (dirty_expire_centisecs),
 * as NFS's do.  The flusher's other passes (memory pressure) leave the
 * inode dirty: no commit there (the ION's fsync is costly, and zoidfs
 * pins no pages until it), and no eviction with writes no commit covered.
 * As the writer, whose credentials the flusher lacks.  A commit that fails
 * keeps its record, which dirties the inode again.
 */
static int zoidfs_write_inode(struct inode *inode, struct writeback_control *wbc)
{
	const struct cred *cred = NULL, *old = NULL;
	bool unstable;
	int err;

	spin_lock(&inode->i_lock);
	unstable = ZI(inode)->unstable.verf;
	if (unstable && ZI(inode)->wb_cred)
		cred = get_cred(ZI(inode)->wb_cred);
	spin_unlock(&inode->i_lock);
	if (!unstable)
		return 0;
	if (wbc->sync_mode != WB_SYNC_ALL && !wbc->for_kupdate) {
		if (cred)
			put_cred(cred);
		mark_inode_dirty_sync(inode);
		return 0;
	}
	if (cred)
		old = override_creds(cred);
	err = zoidfs_commit(inode, 0);
	if (cred) {
		revert_creds(old);
		put_cred(cred);
	}
	/* Writeback drops our answer: syncfs(2) reports the sb's error. */
	if (err && wbc->sync_mode == WB_SYNC_ALL)
		errseq_set(&inode->i_sb->s_wb_err, err);
	return err;
}

static ssize_t zoidfs_write_iter_once(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	bool sync = iocb_is_dsync(iocb);
	/* Appends go to the ION's end of file, not our idea of it: in order. */
	bool append = iocb->ki_flags & IOCB_APPEND;
	struct zoidfs_attr a, last = {};
	int gen = zoidfs_write_gen(inode->i_sb);
	u64 verf;
	/* stop: start no more writes; broken: and count no more results. */
	bool have_attr = false, stop = false, broken = false;
	ssize_t done = 0, err = 0, n;
	size_t chunk, sent = 0;
	struct zoidfs_pipe p;
	loff_t start, next;
	void *buf;

	inode_lock(inode);
	err = generic_write_checks(iocb, from);
	if (err <= 0)
		goto out_unlock;
	err = file_remove_privs(iocb->ki_filp);
	if (err)
		goto out_unlock;
	if (zoidfs_has_dirty(inode)) {
		err = filemap_write_and_wait(inode->i_mapping);
		if (err)
			goto out_unlock;
	}
	/*
	 * Up to `inflight` wsize writes on the wire.  A start copies its
	 * data, so one buffer serves them all.
	 */
	chunk = min_t(size_t, iov_iter_count(from), sbi->wsize);
	zoidfs_pipe_init(&p, append ? 1 : zoidfs_depth(sbi, iov_iter_count(from), chunk));
	buf = kvmalloc(chunk, GFP_KERNEL);
	err = -ENOMEM;
	if (!buf)
		goto out_unlock;
	err = 0;
	start = next = iocb->ki_pos;
	for (;;) {
		unsigned int s;

		while (!stop && !zoidfs_pipe_full(&p) && iov_iter_count(from)) {
			size_t want = min_t(size_t, iov_iter_count(from), chunk);
			s64 at = append ? ZOIDFS_APPEND : next;
			struct zoidfs_io *io;
			size_t got = copy_from_iter(buf, want, from);

			sent += got;
			if (got != want) {
				err = -EFAULT;
				stop = true;
				break;
			}
			err = zoidfs_rs_write_start(&sbi->conn, &ZI(inode)->fh, at, buf, want,
						    sync, &io);
			if (err) {
				stop = true;
				break;
			}
			zoidfs_pipe_push(&p, io, at, want);
			next += want;
		}
		if (!p.n)
			break;
		s = zoidfs_pipe_pop(&p);
		n = zoidfs_rs_write_finish(p.io[s], &a, &verf);
		/* (Its pages are dropped below: not cached, not to be sent again.) */
		if (n > 0 && !sync)
			zoidfs_note_unstable(inode, verf, -1, 0);
		if (broken)
			continue;	/* past a failed or short write: not counted */
		if (n < 0) {
			err = n;
			stop = broken = true;
			continue;
		}
		/* The attributes of the write that left the file largest. */
		if (!have_attr || a.size >= last.size)
			last = a;
		have_attr = true;
		if (append) {
			/* The data ends where the file now ends. */
			iocb->ki_pos = a.size;
			if (!done)
				start = a.size - n;
		} else {
			iocb->ki_pos += n;
		}
		done += n;
		if (n < p.len[s])
			stop = broken = true;
	}
	kvfree(buf);
	/* What was taken from `from` and not written goes back. */
	if (sent > done)
		iov_iter_revert(from, sent - done);
	if (have_attr)
		zoidfs_apply_attr(inode, &last, gen);
	if (done && inode->i_mapping->nrpages)
		invalidate_inode_pages2_range(inode->i_mapping, start >> PAGE_SHIFT,
					      (start + done - 1) >> PAGE_SHIFT);
out_unlock:
	inode_unlock(inode);
	return done ? done : err;
}

/*
 * Reads and writes that go to the ION (cache=none, O_DIRECT): a stale
 * handle fails them before any byte moved (a partial transfer returns its
 * count), and they run again if the handle could be reconnected.
 */
static ssize_t zoidfs_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return zoidfs_stale_retry(file_inode(iocb->ki_filp), zoidfs_read_iter_once(iocb, to));
}

static ssize_t zoidfs_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);

	zoidfs_note_writer(inode);
	return zoidfs_stale_retry(inode, zoidfs_write_iter_once(iocb, from));
}

static int zoidfs_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	return zoidfs_commit(file_inode(file), datasync);
}

/* ---- The page cache (cache=strict|loose; mmap in every mode) ---- */

/*
 * Reads the folio's bytes from the ION; zeroes what lies past the end.  A
 * folio in the kernel's direct map goes in calls of up to rsize, one in
 * high memory a page at a time (each page mapped on its own).
 */
static int zoidfs_fill_folio(struct inode *inode, struct folio *folio)
{
	size_t step = folio_test_highmem(folio) ? PAGE_SIZE : ZSB(inode->i_sb)->rsize;
	loff_t pos = folio_pos(folio);
	size_t len = folio_size(folio), off, want;
	ssize_t n = 0;

	for (off = 0; off < len; off += want) {
		void *addr = step == PAGE_SIZE ? kmap_local_folio(folio, off) :
						 folio_address(folio) + off;

		want = min(len - off, step);
		n = zoidfs_stale_retry(inode, zoidfs_rs_read(zconn(inode), &ZI(inode)->fh,
							     pos + off, addr, want));
		if (n >= 0 && n < want)
			memset(addr + n, 0, want - n);
		if (step == PAGE_SIZE)
			kunmap_local(addr);
		if (n < 0)
			return n;
	}
	return 0;
}

static int zoidfs_read_folio(struct file *file, struct folio *folio)
{
	int err;

	zoid_hook(zoidfs_read_folio, folio->mapping->host->i_ino, folio->index);
	err = zoidfs_fill_folio(folio->mapping->host, folio);
	folio_end_read(folio, !err);
	return err;
}

/*
 * Readahead: the window in calls of up to rsize bytes (whole folios), up to
 * `inflight` of them on the wire.  Each call's folios are mapped together
 * (vmap; a single folio in the direct map is used as it is) and its reply
 * is decoded straight into them: the only copy on the CN is from the
 * reply's pages to the page cache.  A folio left !uptodate
 * (an error, or no room to map it) is read again by read_folio.
 */
static void zoidfs_readahead(struct readahead_control *rac)
{
	struct inode *inode = rac->mapping->host;
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	unsigned int nr = readahead_count(rac), nfolios = 0, npages = 0;
	size_t total = readahead_length(rac), chunk = min_t(size_t, total, sbi->rsize);
	unsigned int next = 0, next_page = 0;	/* the first folio not sent */
	unsigned int first[ZOIDFS_INFLIGHT_MAX], count[ZOIDFS_INFLIGHT_MAX];
	void *addr[ZOIDFS_INFLIGHT_MAX];
	bool vmapped[ZOIDFS_INFLIGHT_MAX];
	struct folio **folios, *folio;
	struct zoidfs_pipe p;
	struct page **pages;
	bool failed = false;
	unsigned int i;

	folios = kvmalloc_array(nr, sizeof(*folios), GFP_KERNEL);
	pages = kvmalloc_array(nr, sizeof(*pages), GFP_KERNEL);
	if (!folios || !pages)
		goto out;	/* the folios left are read_folio's */
	while (nfolios < nr && (folio = readahead_folio(rac))) {
		folios[nfolios++] = folio;
		for (i = 0; i < folio_nr_pages(folio) && npages < nr; i++)
			pages[npages++] = folio_page(folio, i);
	}
	zoidfs_pipe_init(&p, zoidfs_depth(sbi, total, chunk));
	for (;;) {
		while (!failed && !zoidfs_pipe_full(&p) && next < nfolios) {
			unsigned int s = zoidfs_pipe_next(&p), f = next, pg = next_page;
			size_t len = 0;
			struct zoidfs_io *io;

			while (next < nfolios &&
			       (!len || len + folio_size(folios[next]) <= chunk)) {
				len += folio_size(folios[next]);
				next_page += folio_nr_pages(folios[next]);
				next++;
			}
			first[s] = f;
			count[s] = next - f;
			/* One folio in the direct map needs no mapping of its own. */
			vmapped[s] = count[s] > 1 || folio_test_highmem(folios[f]);
			addr[s] = vmapped[s] ? vmap(pages + pg, next_page - pg, VM_MAP, PAGE_KERNEL) :
					       folio_address(folios[f]);
			if (vmapped[s])
				zoidfs_rs_count_run_mapping();
			if (!addr[s] || zoidfs_rs_read_start(&sbi->conn, &ZI(inode)->fh,
							     folio_pos(folios[f]), addr[s], len,
							     &io)) {
				if (addr[s] && vmapped[s])
					vunmap(addr[s]);
				for (i = f; i < next; i++)
					folio_end_read(folios[i], false);
				failed = true;
				break;
			}
			zoidfs_pipe_push(&p, io, folio_pos(folios[f]), len);
		}
		if (!p.n)
			break;
		/* The oldest call: its folios, in order. */
		{
			unsigned int s = zoidfs_pipe_pop(&p);
			ssize_t got = zoidfs_rs_read_finish(p.io[s]);

			/* Past the ION's end of file: zeroes. */
			if (got >= 0 && got < p.len[s])
				memset(addr[s] + got, 0, p.len[s] - got);
			if (vmapped[s])
				vunmap(addr[s]);
			for (i = first[s]; i < first[s] + count[s]; i++)
				folio_end_read(folios[i], got >= 0);
			if (got < 0)
				failed = true;
		}
	}
	/* Folios no call was started for (after an error). */
	for (i = next; i < nfolios; i++)
		folio_end_read(folios[i], false);
out:
	kvfree(folios);
	kvfree(pages);
}

static int zoidfs_write_begin(const struct kiocb *iocb, struct address_space *mapping,
			      loff_t pos, unsigned int len, struct folio **foliop,
			      void **fsdata)
{
	struct inode *inode = mapping->host;
	struct folio *folio;
	size_t from;
	int err;

	folio = write_begin_get_folio(iocb, mapping, pos / PAGE_SIZE, len);
	if (IS_ERR(folio))
		return PTR_ERR(folio);
	*foliop = folio;
	from = offset_in_folio(folio, pos);
	/* The folio may be smaller than the write (the caller writes what fits). */
	len = min_t(size_t, len, folio_size(folio) - from);
	if (folio_test_uptodate(folio) || len == folio_size(folio))
		return 0;
	/* Nothing of the file around the write: zeroes. */
	if (folio_pos(folio) >= i_size_read(inode) ||
	    (from == 0 && pos + len >= i_size_read(inode))) {
		folio_zero_segments(folio, 0, from, from + len, folio_size(folio));
		return 0;
	}
	err = zoidfs_fill_folio(inode, folio);
	if (err) {
		folio_unlock(folio);
		folio_put(folio);
		return err;
	}
	folio_mark_uptodate(folio);
	return 0;
}

static int zoidfs_write_end(const struct kiocb *iocb, struct address_space *mapping,
			    loff_t pos, unsigned int len, unsigned int copied,
			    struct folio *folio, void *fsdata)
{
	struct inode *inode = mapping->host;

	/* A short copy into a folio we did not read: try again. */
	if (!folio_test_uptodate(folio)) {
		if (copied < len) {
			copied = 0;
			goto out;
		}
		folio_mark_uptodate(folio);
	}
	folio_mark_dirty(folio);
	spin_lock(&inode->i_lock);
	if (pos + copied > inode->i_size)
		i_size_write(inode, pos + copied);
	spin_unlock(&inode->i_lock);
out:
	folio_unlock(folio);
	folio_put(folio);
	return copied;
}

/*
 * Write-back: runs of contiguous dirty folios, up to wsize per call and up
 * to `inflight` calls on the wire.  A run's folios are mapped together
 * (vmap) and the call copies them straight into its message; they stay
 * under writeback until the ION answers.  Only if they cannot be mapped
 * are they copied into `buf` first (allocated then, once per write-back),
 * and without memory for it either, the run goes a page per call.
 */
struct zoidfs_wb {
	struct inode *inode;
	void *buf;
	struct page **pages;	/* a run's pages, to map them (wsize / PAGE_SIZE) */
	size_t cap;
	loff_t start;
	size_t len;
	/* The run being gathered: its folios are batch `pipe.next`'s. */
	unsigned int n, max;
	/* Runs in flight: each slot's folios at folios[slot * max]. */
	struct zoidfs_pipe pipe;
	struct folio **folios;
	unsigned int nfolios[ZOIDFS_INFLIGHT_MAX];
	int error;
};

/* Ends the writeback of a run: `err` is its outcome. */
static void zoidfs_wb_end(struct zoidfs_wb *wb, unsigned int s, int err)
{
	struct folio **f = wb->folios + s * wb->max;
	unsigned int i;

	for (i = 0; i < wb->nfolios[s]; i++) {
		if (err)
			mapping_set_error(f[i]->mapping, err);
		folio_end_writeback(f[i]);
	}
	if (err && !wb->error)
		wb->error = err;
}

/*
 * Sends run `s` a page per call, from its folios (still under writeback; a
 * folio written meanwhile is dirty again and goes in a later write-back),
 * from its byte `skip` on: again once its handle, found stale, is
 * reconnected; in the first place when there was no memory to send it
 * whole; or the rest of it after the ION wrote only part (a full export:
 * the next call says why, ENOSPC).
 * Bytes of the run written (`skip` included), or the negative errno of the
 * call that failed.
 */
static ssize_t zoidfs_wb_resend(struct zoidfs_wb *wb, unsigned int s, size_t skip)
{
	struct folio **f = wb->folios + s * wb->max;
	struct inode *inode = wb->inode;
	size_t len = wb->pipe.len[s], done = skip, at = 0;
	loff_t pos = wb->pipe.pos[s];
	unsigned int i;

	for (i = 0; i < wb->nfolios[s] && done < len; i++) {
		size_t off;

		for (off = 0; off < folio_size(f[i]) && done < len; off += PAGE_SIZE, at += PAGE_SIZE) {
			size_t in_page, n_want;
			struct zoidfs_attr a;
			void *addr;
			ssize_t n;
			u64 verf;

			/* Written already: this page, or its first bytes. */
			if (at + PAGE_SIZE <= done)
				continue;
			in_page = done - at;
			n_want = min_t(size_t, len - done, PAGE_SIZE - in_page);
			addr = kmap_local_folio(f[i], off);
			n = zoidfs_rs_write(zconn(inode), &ZI(inode)->fh, pos + done,
					    (char *)addr + in_page, n_want, false, &a, &verf);
			kunmap_local(addr);
			if (n < 0)
				return n;
			if (n > 0) {
				zoidfs_set_attr(inode, &a, true);
				zoidfs_note_unstable(inode, verf, pos + done, n);
			}
			done += n;
			if ((size_t)n < n_want)
				return done;
		}
	}
	return done;
}

/* Waits for the oldest run in flight. */
static void zoidfs_wb_finish_one(struct zoidfs_wb *wb)
{
	unsigned int s = zoidfs_pipe_pop(&wb->pipe);
	struct zoidfs_attr a;
	ssize_t n;
	u64 verf;

	n = zoidfs_rs_write_finish(wb->pipe.io[s], &a, &verf);
	if (n == -ESTALE && !zoidfs_reconnect(wb->inode)) {
		n = zoidfs_wb_resend(wb, s, 0);
	} else if (n > 0) {
		zoidfs_set_attr(wb->inode, &a, true);
		zoidfs_note_unstable(wb->inode, verf, wb->pipe.pos[s], n);
		/* Part written: the rest again, whose failure says why. */
		if (n < wb->pipe.len[s])
			n = zoidfs_wb_resend(wb, s, n);
	}
	if (n >= 0 && n < wb->pipe.len[s]) {
		pr_warn_ratelimited("zoidfs: ION wrote %zd of %zu bytes at %lld\n", n,
				    wb->pipe.len[s], wb->pipe.pos[s]);
		n = -EIO;
	}
	zoidfs_wb_end(wb, s, n < 0 ? n : 0);
}

/*
 * The bytes of run `s`, contiguous: a single folio in the direct map as it
 * is, else its folios mapped together (*mapped, to vunmap once the call has
 * copied them), or else copied into `buf`; NULL if there is memory for
 * neither.
 */
static const void *zoidfs_wb_data(struct zoidfs_wb *wb, unsigned int s, void **mapped)
{
	struct folio **f = wb->folios + s * wb->max;
	unsigned int i, j, np = 0;
	size_t done = 0;

	*mapped = NULL;
	if (wb->nfolios[s] == 1 && !folio_test_highmem(f[0]))
		return folio_address(f[0]);
	for (i = 0; wb->pages && i < wb->nfolios[s]; i++) {
		if (np + folio_nr_pages(f[i]) > wb->max)
			break;
		for (j = 0; j < folio_nr_pages(f[i]); j++)
			wb->pages[np++] = folio_page(f[i], j);
	}
	if (wb->pages && i == wb->nfolios[s]) {
		/* Write-back may serve reclaim: no allocation may recurse into fs. */
		unsigned int nofs = memalloc_nofs_save();

		*mapped = vmap(wb->pages, np, VM_MAP, PAGE_KERNEL);
		memalloc_nofs_restore(nofs);
		zoidfs_rs_count_run_mapping();
	}
	if (*mapped)
		return *mapped;
	/* A large folio outgrows a page-sized run (see zoidfs_writepages()). */
	if (wb->len > wb->cap)
		return NULL;
	if (!wb->buf)
		wb->buf = kvmalloc(wb->cap, GFP_NOFS | __GFP_NOWARN);
	if (!wb->buf)
		return NULL;
	for (i = 0; i < wb->nfolios[s]; i++) {
		size_t len = min_t(size_t, folio_size(f[i]), wb->len - done);

		memcpy_from_folio(wb->buf + done, f[i], 0, len);
		done += len;
	}
	return wb->buf;
}

/* Sends the gathered run (waiting for the oldest if the pipe is full). */
static void zoidfs_wb_flush(struct zoidfs_wb *wb)
{
	struct zoidfs_io *io;
	const void *data;
	unsigned int s;
	void *mapped;
	int err;

	if (!wb->len)
		return;
	s = zoidfs_pipe_next(&wb->pipe);
	wb->nfolios[s] = wb->n;
	data = zoidfs_wb_data(wb, s, &mapped);
	if (!data) {
		/* No memory to put the run together: a page per call, now. */
		ssize_t n;

		wb->pipe.pos[s] = wb->start;
		wb->pipe.len[s] = wb->len;
		n = zoidfs_wb_resend(wb, s, 0);
		zoidfs_wb_end(wb, s, n < 0 ? n : (size_t)n < wb->len ? -EIO : 0);
		wb->n = 0;
		wb->len = 0;
		return;
	}
	/* The start copies the data into the call: the mapping can go. */
	err = zoidfs_rs_write_start(zconn(wb->inode), &ZI(wb->inode)->fh, wb->start, data,
				    wb->len, false, &io);
	if (mapped)
		vunmap(mapped);
	if (err)
		zoidfs_wb_end(wb, s, err);
	else
		zoidfs_pipe_push(&wb->pipe, io, wb->start, wb->len);
	wb->n = 0;
	wb->len = 0;
	/* The next run gathers into the next slot: it must be free. */
	if (zoidfs_pipe_full(&wb->pipe))
		zoidfs_wb_finish_one(wb);
}

/*
 * consistency=relaxed: pages dirtied under a grant the ION forgot
 * (zoidfs_grant_void()) are never sent: they end their write-back
 * unwritten and the mapping reports EIO, as after a failed write.
 */
static int zoidfs_writepages_void(struct address_space *mapping, struct writeback_control *wbc)
{
	struct folio *folio = NULL;
	bool dropped = false;
	int error = 0;

	while ((folio = writeback_iter(mapping, wbc, folio, &error))) {
		folio_start_writeback(folio);
		folio_unlock(folio);
		folio_end_writeback(folio);
		dropped = true;
	}
	if (!dropped)
		return error;
	mapping_set_error(mapping, -EIO);
	zoidfs_rs_count_void_data();
	return -EIO;
}

static int zoidfs_writepages(struct address_space *mapping, struct writeback_control *wbc)
{
	struct inode *inode = mapping->host;
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	struct zoidfs_wb wb = { .inode = inode };
	const struct cred *cred, *old = NULL;
	struct folio *folio = NULL;
	unsigned int depth = sbi->inflight;
	u64 written = 0;
	int error = 0;

	if (sbi->relaxed && zoidfs_grant_void(inode))
		return zoidfs_writepages_void(mapping, wbc);

	wb.cap = sbi->wsize;
	wb.max = wb.cap / PAGE_SIZE;
	wb.folios = kmalloc_array(depth * wb.max, sizeof(*wb.folios), GFP_NOFS | __GFP_NOWARN);
	if (!wb.folios) {
		/*
		 * Short of memory (reclaim may be waiting on us): a page per
		 * call.  A large folio still makes one run of its own, sent by
		 * zoidfs_wb_resend() a page per call (zoidfs_wb_data()).
		 */
		wb.cap = PAGE_SIZE;
		wb.max = 1;
		depth = 1;
		wb.folios = kmalloc(sizeof(*wb.folios), GFP_NOFS);
		if (!wb.folios)
			return -ENOMEM;
	}
	/* Without it, runs are copied into buf. */
	wb.pages = kmalloc_array(wb.max, sizeof(*wb.pages), GFP_NOFS | __GFP_NOWARN);
	zoidfs_pipe_init(&wb.pipe, depth);
	/* Background write-back runs in a kworker: use the writer's identity. */
	spin_lock(&inode->i_lock);
	cred = ZI(inode)->wb_cred ? get_cred(ZI(inode)->wb_cred) : NULL;
	spin_unlock(&inode->i_lock);
	if (cred)
		old = override_creds(cred);

	while ((folio = writeback_iter(mapping, wbc, folio, &error))) {
		loff_t pos = folio_pos(folio), isize = i_size_read(inode);
		size_t len;

		if (pos >= isize) {
			/* Truncated away meanwhile. */
			folio_unlock(folio);
			continue;
		}
		len = min_t(loff_t, folio_size(folio), isize - pos);
		if (wb.len && (pos != wb.start + wb.len || wb.len + len > wb.cap ||
			       wb.n == wb.max))
			zoidfs_wb_flush(&wb);
		if (!wb.len)
			wb.start = pos;
		folio_start_writeback(folio);
		folio_unlock(folio);
		wb.folios[zoidfs_pipe_next(&wb.pipe) * wb.max + wb.n++] = folio;
		wb.len += len;
		written++;
	}
	zoid_hook(zoidfs_writeback, inode->i_ino, written);
	zoidfs_wb_flush(&wb);
	while (wb.pipe.n)
		zoidfs_wb_finish_one(&wb);
	if (cred) {
		revert_creds(old);
		put_cred(cred);
	}
	kvfree(wb.buf);
	kfree(wb.folios);
	kfree(wb.pages);
	return error ? error : wb.error;
}

static const struct address_space_operations zoidfs_aops = {
	.read_folio = zoidfs_read_folio,
	.readahead = zoidfs_readahead,
	.write_begin = zoidfs_write_begin,
	.write_end = zoidfs_write_end,
	.writepages = zoidfs_writepages,
	.dirty_folio = filemap_dirty_folio,
	.migrate_folio = filemap_migrate_folio,
};

/* cache=strict: open sees what the last close on any CN wrote. */
static int zoidfs_cached_open(struct inode *inode, struct file *file)
{
	int err;

	if (ZSB(inode->i_sb)->cache == Cache_strict) {
		err = zoidfs_revalidate(inode, true);
		if (err)
			return err;
	}
	return zoidfs_open(inode, file);
}

/*
 * close: writes back, then commits what the ION took unsynced, as NFS's
 * close does: what a close acknowledged survives an ION crash.
 */
static int zoidfs_cached_flush(struct file *file, fl_owner_t id)
{
	struct inode *inode = file_inode(file);
	bool unstable;
	int err;

	zoid_hook(zoidfs_close, inode->i_ino, 0);
	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	err = file_write_and_wait(file);
	if (err)
		return err;
	spin_lock(&inode->i_lock);
	unstable = ZI(inode)->unstable.verf;
	spin_unlock(&inode->i_lock);
	return unstable ? zoidfs_commit(inode, 0) : 0;
}

static ssize_t zoidfs_cached_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int err;

	if (!(iocb->ki_flags & IOCB_DIRECT))
		return generic_file_read_iter(iocb, to);
	/* O_DIRECT: cached dirty data first, then straight from the ION. */
	err = filemap_write_and_wait_range(inode->i_mapping, iocb->ki_pos,
					   iocb->ki_pos + iov_iter_count(to) - 1);
	if (err)
		return err;
	return zoidfs_read_iter(iocb, to);
}

/*
 * Before a write into the page cache: note the writer, and take an append's
 * end of file from the ION unless ours is ahead of it.
 */
static int zoidfs_prepare_buffered_write(struct kiocb *iocb, struct inode *inode)
{
	zoidfs_note_writer(inode);
	if ((iocb->ki_flags & IOCB_APPEND) && !zoidfs_has_dirty(inode))
		return zoidfs_revalidate(inode, true);
	return 0;
}

static ssize_t zoidfs_cached_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	ssize_t n;

	if (iocb->ki_flags & IOCB_DIRECT) {
		n = filemap_write_and_wait(inode->i_mapping);
		if (n)
			return n;
		return zoidfs_write_iter(iocb, from);
	}
	n = zoidfs_prepare_buffered_write(iocb, inode);
	if (n)
		return n;
	return generic_file_write_iter(iocb, from);
}

static int zoidfs_cached_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);
	int err = file_write_and_wait_range(file, start, end);

	if (err)
		return err;
	return zoidfs_commit(inode, datasync);
}

static int zoidfs_cached_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (file->f_mode & FMODE_WRITE)
		zoidfs_note_writer(file_inode(file));
	return generic_file_mmap(file, vma);
}

/* ---- consistency=relaxed ---- */

/* Writes back what this CN cached, keeping errors for fsync and close. */
static void zoidfs_relaxed_writeback(struct inode *inode)
{
	filemap_fdatawrite(inode->i_mapping);
	filemap_fdatawait_keep_errors(inode->i_mapping);
}

/* Grants change under inode_lock (see zoidfs_relaxed_write_iter). */
static void zoidfs_set_grant(struct inode *inode, u32 grant, u32 session)
{
	inode_lock(inode);
	WRITE_ONCE(ZI(inode)->grant_session, session);
	WRITE_ONCE(ZI(inode)->grant, grant);
	inode_unlock(inode);
}

/*
 * What this CN cached under a void grant is dropped, never written back
 * over what other CNs wrote since: fsync and close report EIO for data
 * that was dirty, and the attributes are fetched again.  Called with
 * inode_lock held.
 */
static void zoidfs_grant_drop_void_locked(struct inode *inode)
{
	bool dirty;

	if (!zoidfs_grant_void(inode))
		return;
	WRITE_ONCE(ZI(inode)->grant, 0);
	dirty = zoidfs_has_dirty(inode);
	if (dirty)
		mapping_set_error(inode->i_mapping, -EIO);
	truncate_inode_pages(inode->i_mapping, 0);
	zoidfs_attr_stale(inode);
	zoidfs_rs_count_grant_void(dirty);
	pr_warn_ratelimited("zoidfs: inode %llu: the ION forgot this CN's grant%s\n",
			    (unsigned long long)inode->i_ino,
			    dirty ? "; the data cached under it is lost (EIO)" : "");
}

static void zoidfs_grant_drop_void(struct inode *inode)
{
	if (!zoidfs_grant_void(inode))
		return;
	inode_lock(inode);
	zoidfs_grant_drop_void_locked(inode);
	inode_unlock(inode);
}

/* The first open on this CN asks the ION for a grant. */
static int zoidfs_relaxed_open(struct inode *inode, struct file *file)
{
	struct zoidfs_inode *zi = ZI(inode);
	u32 grant = 0, session;
	int err;

	err = zoidfs_open(inode, file);
	if (err)
		return err;
	mutex_lock(&zi->open_lock);
	zoidfs_grant_drop_void(inode);
	if (!zi->opens) {
		/* (0: not attached yet; the open attaches.) */
		session = zoid_client_session();
		err = zoidfs_stale_retry(inode, zoidfs_rs_open(zconn(inode), &zi->fh, inode->i_ino,
							       &grant));
		if (!session)
			session = zoid_client_session();
		if (!err && grant) {
			/* Ours alone from now on: start from the ION's data. */
			err = zoidfs_revalidate(inode, true);
			if (!err && !zoidfs_has_dirty(inode))
				invalidate_mapping_pages(inode->i_mapping, 0, -1);
			if (err)
				zoidfs_rs_close(zconn(inode), &zi->fh);
		}
		if (err)
			goto out;
		/* Granted under another attach than the one now: void at once. */
		zoidfs_set_grant(inode, grant, session);
	}
	zi->opens++;
out:
	mutex_unlock(&zi->open_lock);
	return err;
}

/* The last close on this CN writes back and gives the grant up. */
static int zoidfs_relaxed_release(struct inode *inode, struct file *file)
{
	struct zoidfs_inode *zi = ZI(inode);

	mutex_lock(&zi->open_lock);
	if (!WARN_ON_ONCE(!zi->opens) && !--zi->opens) {
		zoidfs_grant_drop_void(inode);
		if (zi->grant) {
			zoidfs_relaxed_writeback(inode);
			zoidfs_set_grant(inode, 0, 0);
		}
		/* Failure (an ION gone) leaves the ION to forget us. */
		zoidfs_rs_close(zconn(inode), &zi->fh);
	}
	mutex_unlock(&zi->open_lock);
	return 0;
}

/* The ION recalls `grant`: write back, stop caching, drop the pages. */
static void zoidfs_relaxed_recall(struct inode *inode, u32 grant)
{
	struct zoidfs_inode *zi = ZI(inode);

	mutex_lock(&zi->open_lock);
	zoidfs_grant_drop_void(inode);
	if (zi->grant && zi->grant == grant) {
		zoidfs_set_grant(inode, 0, 0);
		zoidfs_relaxed_writeback(inode);
		invalidate_inode_pages2(inode->i_mapping);
	}
	mutex_unlock(&zi->open_lock);
}

struct zoidfs_recall {
	struct work_struct work;
	struct zoidfs_fh fh;
	u64 ino;
	u32 grant;
};

static void zoidfs_recall_work(struct work_struct *work)
{
	struct zoidfs_recall *r = container_of(work, struct zoidfs_recall, work);
	static const struct zoidfs_conn any = { .timeout_ms = 0, .mode = ZOID_CALL_DEFAULT };
	struct zoidfs_conn conn = any;
	struct super_block **sbs = NULL;
	struct zoidfs_sb *sbi;
	unsigned int n = 0, i;

	/*
	 * The relaxed mounts, each kept alive by an active reference (as NFS
	 * callbacks do), so that recalls run in parallel and none holds the
	 * list while it writes back.
	 */
	mutex_lock(&zoidfs_relaxed_lock);
	list_for_each_entry(sbi, &zoidfs_relaxed_sbs, relaxed_sbs)
		n++;
	if (n)
		sbs = kmalloc_array(n, sizeof(*sbs), GFP_KERNEL);
	n = 0;
	if (sbs) {
		list_for_each_entry(sbi, &zoidfs_relaxed_sbs, relaxed_sbs)
			if (atomic_inc_not_zero(&sbi->sb->s_active))
				sbs[n++] = sbi->sb;
	}
	mutex_unlock(&zoidfs_relaxed_lock);
	for (i = 0; i < n; i++) {
		struct inode *inode = ilookup5(sbs[i], r->ino, zoidfs_test, &r->fh);

		if (inode) {
			zoidfs_relaxed_recall(inode, r->grant);
			/* Its timeout; the answer goes even after umount -f. */
			conn.timeout_ms = ZSB(sbs[i])->conn.timeout_ms;
			iput(inode);
		}
		deactivate_super(sbs[i]);
	}
	kfree(sbs);
	/*
	 * Answered even when nothing here holds it any more.  Always soft,
	 * even for a hard mount: an ION that is gone times the recall out by
	 * itself, while a hard answer would retry for ever and hang rmmod in
	 * destroy_workqueue().
	 */
	conn.mode = ZOID_CALL_SOFT;
	zoidfs_rs_recalled(&conn, &r->fh, r->grant);
	kfree(r);
}

/* zoid's upcall handler (treenet's engine thread: no sleeping here). */
static void zoidfs_upcall(u16 function, const void *body, size_t len)
{
	struct zoidfs_recall *r = kmalloc(sizeof(*r), GFP_NOWAIT | __GFP_NOWARN);

	if (!r) {
		pr_warn_ratelimited("zoidfs: no memory for a recall; the ION will time it out\n");
		return;
	}
	if (zoidfs_rs_parse_recall(function, body, len, &r->fh, &r->ino, &r->grant)) {
		kfree(r);
		return;
	}
	INIT_WORK(&r->work, zoidfs_recall_work);
	queue_work(zoidfs_recall_wq, &r->work);
}

/*
 * close: with a grant, only the last reference of this open file writes
 * back (a dup closed by a child, as `cmd >&3` does, does not); the
 * release of the last open on this CN writes back the rest.
 */
static int zoidfs_relaxed_flush(struct file *file, fl_owner_t id)
{
	zoidfs_grant_drop_void(file_inode(file));
	if (READ_ONCE(ZI(file_inode(file))->grant) && file_count(file) > 1)
		return 0;
	return zoidfs_cached_flush(file, id);
}

static int zoidfs_relaxed_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	zoidfs_grant_drop_void(file_inode(file));
	return zoidfs_cached_fsync(file, start, end, datasync);
}

static ssize_t zoidfs_relaxed_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	zoidfs_grant_drop_void(file_inode(iocb->ki_filp));
	if (READ_ONCE(ZI(file_inode(iocb->ki_filp))->grant))
		return zoidfs_cached_read_iter(iocb, to);
	return zoidfs_read_iter(iocb, to);
}

/*
 * The grant is checked under inode_lock, which a recall takes to clear
 * it: no buffered write lands in the page cache after a recall.
 */
static ssize_t zoidfs_relaxed_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	ssize_t n;

	if (iocb->ki_flags & IOCB_DIRECT) {
		zoidfs_grant_drop_void(inode);
		return zoidfs_cached_write_iter(iocb, from);
	}
	inode_lock(inode);
	zoidfs_grant_drop_void_locked(inode);
	if (!ZI(inode)->grant) {
		inode_unlock(inode);
		return zoidfs_write_iter(iocb, from);
	}
	n = zoidfs_prepare_buffered_write(iocb, inode);
	if (n)
		goto out;
	n = generic_write_checks(iocb, from);
	if (n > 0)
		n = __generic_file_write_iter(iocb, from);
out:
	inode_unlock(inode);
	if (n > 0)
		n = generic_write_sync(iocb, n);
	return n;
}

static const struct file_operations zoidfs_relaxed_fops = {
	.owner = THIS_MODULE,
	.open = zoidfs_relaxed_open,
	.release = zoidfs_relaxed_release,
	.flush = zoidfs_relaxed_flush,
	.llseek = generic_file_llseek,
	.read_iter = zoidfs_relaxed_read_iter,
	.write_iter = zoidfs_relaxed_write_iter,
	.mmap = zoidfs_cached_mmap,
	.fsync = zoidfs_relaxed_fsync,
	.splice_read = copy_splice_read,
	.splice_write = iter_file_splice_write,
};

/*
 * cache=none: read and write go to the ION; mmap is the one user of the
 * page cache (its dirty pages are written back at msync, close and fsync,
 * and before a read or write of their range).
 */
static const struct file_operations zoidfs_file_fops = {
	.owner = THIS_MODULE,
	.open = zoidfs_open,
	.flush = zoidfs_cached_flush,
	.llseek = generic_file_llseek,
	.read_iter = zoidfs_read_iter,
	.write_iter = zoidfs_write_iter,
	.mmap = zoidfs_cached_mmap,
	.fsync = zoidfs_cached_fsync,
	.splice_read = copy_splice_read,
};

static const struct file_operations zoidfs_cached_fops = {
	.owner = THIS_MODULE,
	.open = zoidfs_cached_open,
	.flush = zoidfs_cached_flush,
	.llseek = generic_file_llseek,
	.read_iter = zoidfs_cached_read_iter,
	.write_iter = zoidfs_cached_write_iter,
	.mmap = zoidfs_cached_mmap,
	.fsync = zoidfs_cached_fsync,
	.splice_read = filemap_splice_read,
	.splice_write = iter_file_splice_write,
};

/* Directory positions are the ION's cookies: any value >= 0, even on 32-bit. */
static loff_t zoidfs_dir_llseek(struct file *file, loff_t offset, int whence)
{
	return generic_file_llseek_size(file, offset, whence, LLONG_MAX,
					i_size_read(file_inode(file)));
}

static const struct file_operations zoidfs_dir_fops = {
	.owner = THIS_MODULE,
	.llseek = zoidfs_dir_llseek,
	.read = generic_read_dir,
	.iterate_shared = zoidfs_readdir,
	.fsync = zoidfs_fsync,
};


/* ---- consistency=ssi ---- */

/* Object `index` of `inode`'s file. */
static u64 zoidfs_ssi_object(struct inode *inode, u64 index)
{
	return (u64)ZI(inode)->ssi_key << 32 | index;
}

/*
 * ssi's news about `object`, in its receive thread or in the task that
 * released the object, before the message that lets another CN go on is
 * sent: a page object that leaves or is sent has its page written back
 * (and dropped, when this CN's copy leaves), one that arrives drops a
 * page cached without it (a race with a fault); the size object writes
 * the whole file back (the ION's size then is this CN's) and marks the
 * attributes stale.
 */
static void zoidfs_ssi_event(void *ctx, u64 object, int event)
{
	struct zoidfs_sb *sbi = ctx;
	struct zoidfs_inode *zi;
	struct inode *found[4];
	u64 index = object & ZOIDFS_SSI_SIZE;
	int i, n = 0;

	/* Files whose keys collide share objects: every one of them hears. */
	spin_lock(&sbi->ssi_lock);
	list_for_each_entry(zi, &sbi->ssi_inodes, ssi_link) {
		if (zi->ssi_key == object >> 32 && n < ARRAY_SIZE(found) &&
		    igrab(&zi->vfs_inode))
			found[n++] = &zi->vfs_inode;
	}
	spin_unlock(&sbi->ssi_lock);
	for (i = 0; i < n; i++) {
		struct inode *inode = found[i];
		struct address_space *m = inode->i_mapping;

		int err = 0;

		if (index == ZOIDFS_SSI_SIZE) {
			if (event != Ssi_insert)
				err = filemap_write_and_wait(m);
			if (event != Ssi_export)
				set_bit(ZOIDFS_SSI_STALE, &ZI(inode)->ssi_flags);
		} else {
			loff_t pos = index << PAGE_SHIFT;

			if (event != Ssi_insert)
				err = filemap_write_and_wait_range(m, pos, pos + PAGE_SIZE - 1);
			if (event != Ssi_export && m->nrpages)
				invalidate_inode_pages2_range(m, index, index);
		}
		/*
		 * The ION took no write-back (it is gone, or refused it): the
		 * other CN reads what the ION has.  The error stays on the file
		 * for this CN's fsync and close; count it, and say it.
		 */
		if (err) {
			zoidfs_rs_ssi_count(Ssi_writeback_error);
			pr_warn_ratelimited("zoidfs: consistency=ssi: write-back of inode %llu failed (%d) before another CN took it\n",
					    (unsigned long long)inode->i_ino, err);
		}
		iput(inode);
	}
	zoidfs_rs_ssi_count(event);
}

static void zoidfs_ssi_insert(void *ctx, u64 object)
{
	zoidfs_ssi_event(ctx, object, Ssi_insert);
}

static void zoidfs_ssi_invalidate(void *ctx, u64 object)
{
	zoidfs_ssi_event(ctx, object, Ssi_invalidate);
}

static void zoidfs_ssi_export(void *ctx, u64 object)
{
	zoidfs_ssi_event(ctx, object, Ssi_export);
}

/*
 * Holds the file's size object (to write: to change the size) and, if it
 * moved since this CN last looked, takes the attributes from the ION (the
 * CN that had it wrote back first) and drops the whole cache if another
 * CN truncated the file meanwhile.
 */
static int zoidfs_ssi_hold_size(struct inode *inode, bool write)
{
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	struct zoidfs_inode *zi = ZI(inode);
	u64 object = zoidfs_ssi_object(inode, ZOIDFS_SSI_SIZE);
	__le64 truncs;
	int err;

	err = zoid_coherence_hold(&sbi->coh, object, write);
	if (err)
		return err;
	if (!test_and_clear_bit(ZOIDFS_SSI_STALE, &zi->ssi_flags))
		return 0;
	err = zoid_coherence_read(&sbi->coh, object, &truncs, sizeof(truncs));
	if (!err && le64_to_cpu(truncs) != zi->ssi_truncs) {
		err = filemap_write_and_wait(inode->i_mapping);
		if (!err)
			err = invalidate_inode_pages2(inode->i_mapping);
		if (!err)
			zi->ssi_truncs = le64_to_cpu(truncs);
	}
	if (!err)
		err = zoidfs_revalidate(inode, true);
	if (err) {
		set_bit(ZOIDFS_SSI_STALE, &zi->ssi_flags);
		zoid_coherence_unhold(&sbi->coh, object);
		return err;
	}
	zoidfs_rs_ssi_count(Ssi_refresh);
	return 0;
}

static void zoidfs_ssi_unhold_size(struct inode *inode)
{
	zoid_coherence_unhold(&ZSB(inode->i_sb)->coh,
			      zoidfs_ssi_object(inode, ZOIDFS_SSI_SIZE));
}

/* A truncate: under the size object, and counted in it for the others. */
static int zoidfs_ssi_truncate(struct mnt_idmap *idmap, struct dentry *dentry,
			       struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	u64 object = zoidfs_ssi_object(inode, ZOIDFS_SSI_SIZE);
	__le64 truncs;
	int err;

	err = zoidfs_ssi_hold_size(inode, true);
	if (err)
		return err;
	err = zoidfs_do_setattr(idmap, dentry, ia);
	/* The object's count (files whose keys collide share it), plus one. */
	if (!err)
		err = zoid_coherence_read(&sbi->coh, object, &truncs, sizeof(truncs));
	if (!err) {
		ZI(inode)->ssi_truncs = le64_to_cpu(truncs) + 1;
		truncs = cpu_to_le64(ZI(inode)->ssi_truncs);
		err = zoid_coherence_write(&sbi->coh, object, &truncs, sizeof(truncs));
	}
	zoid_coherence_unhold(&sbi->coh, object);
	return err;
}

/*
 * Moves the bytes of `iter` at ki_pos page by page, each page under its
 * object's hold (to write, or to read), with `move` (a read stops at the
 * end of the file).  Returns the bytes moved, or the error if none were.
 */
static ssize_t zoidfs_ssi_by_page(struct kiocb *iocb, struct iov_iter *iter, bool write,
				  ssize_t (*move)(struct kiocb *, struct iov_iter *))
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	ssize_t done = 0, n;
	int err = 0;

	while (iov_iter_count(iter) && (write || iocb->ki_pos < i_size_read(inode))) {
		u64 index = iocb->ki_pos >> PAGE_SHIFT, object;
		size_t chunk = min_t(size_t, iov_iter_count(iter),
				     PAGE_SIZE - offset_in_page(iocb->ki_pos));
		size_t rest = iov_iter_count(iter) - chunk;

		if (index >= ZOIDFS_SSI_SIZE) {
			err = -EFBIG;
			break;
		}
		object = zoidfs_ssi_object(inode, index);
		err = zoid_coherence_hold(&sbi->coh, object, write);
		if (err)
			break;
		iov_iter_truncate(iter, chunk);
		n = move(iocb, iter);
		iov_iter_reexpand(iter, iov_iter_count(iter) + rest);
		zoid_coherence_unhold(&sbi->coh, object);
		if (n <= 0) {
			err = n;
			break;
		}
		done += n;
		if (n < chunk)
			break;
	}
	return done ? done : err;
}

/* Reads through the page cache (O_DIRECT too: coherence is the cache's here). */
static ssize_t zoidfs_ssi_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	ssize_t n;

	if (!iov_iter_count(to))
		return 0;
	iocb->ki_flags &= ~IOCB_DIRECT;
	n = zoidfs_ssi_hold_size(inode, false);
	if (n)
		return n;
	n = zoidfs_ssi_by_page(iocb, to, false, generic_file_read_iter);
	zoidfs_ssi_unhold_size(inode);
	return n;
}

/*
 * Writes into the page cache (written back later, or when another CN asks
 * for the page).  A write that may grow the file holds the size object to
 * write.  O_DIRECT writes back what it wrote before it returns.
 */
static ssize_t zoidfs_ssi_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	bool direct = iocb->ki_flags & IOCB_DIRECT, grow;
	loff_t start = iocb->ki_pos;
	ssize_t n;
	int err;

	iocb->ki_flags &= ~IOCB_DIRECT;
	zoidfs_note_writer(inode);
	inode_lock(inode);
	grow = (iocb->ki_flags & IOCB_APPEND) ||
		iocb->ki_pos + iov_iter_count(from) > i_size_read(inode);
	for (;;) {
		n = zoidfs_ssi_hold_size(inode, grow);
		if (n)
			goto unlock;
		if (grow || iocb->ki_pos + iov_iter_count(from) <= i_size_read(inode))
			break;
		/* The file shrank meanwhile: the write grows it now. */
		zoidfs_ssi_unhold_size(inode);
		grow = true;
	}
	n = generic_write_checks(iocb, from);
	if (n > 0) {
		n = file_remove_privs(file);
		if (!n)
			n = file_update_time(file);
	}
	if (!n) {
		start = iocb->ki_pos;
		n = zoidfs_ssi_by_page(iocb, from, true, generic_perform_write);
	}
	zoidfs_ssi_unhold_size(inode);
unlock:
	inode_unlock(inode);
	if (n > 0 && direct) {
		err = filemap_write_and_wait_range(inode->i_mapping, start, start + n - 1);
		if (err)
			return err;
	}
	if (n > 0)
		return generic_write_sync(iocb, n);
	return n;
}

/*
 * close: the last close of an open file writes back (errors reported
 * there); before it, cached writes wait for another CN to ask for them.
 */
static int zoidfs_ssi_flush(struct file *file, fl_owner_t id)
{
	if (file_count(file) > 1)
		return 0;
	return zoidfs_cached_flush(file, id);
}

/* lseek to the end (or to data or holes): the size as it is now. */
static loff_t zoidfs_ssi_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	loff_t pos;
	int err;

	if (whence != SEEK_END && whence != SEEK_DATA && whence != SEEK_HOLE)
		return generic_file_llseek(file, offset, whence);
	err = zoidfs_ssi_hold_size(inode, false);
	if (err)
		return err;
	pos = generic_file_llseek(file, offset, whence);
	zoidfs_ssi_unhold_size(inode);
	return pos;
}

/*
 * Faults hold the page's object as reads and writes do, and let ssi
 * release it a little later, from its thread: the fault returns its folio
 * locked, and the release may have to drop that folio.  The file is held
 * across the fault (a retried fault lets go of the mm and the file).
 */
static vm_fault_t zoidfs_ssi_fault_with(struct vm_fault *vmf, bool write,
					vm_fault_t (*fault)(struct vm_fault *))
{
	struct file *file = get_file(vmf->vma->vm_file);
	struct inode *inode = file_inode(file);
	struct zoidfs_sb *sbi = ZSB(inode->i_sb);
	vm_fault_t ret = VM_FAULT_SIGBUS;
	u64 object, token;
	int err;

	if (vmf->pgoff >= ZOIDFS_SSI_SIZE)
		goto out;
	object = zoidfs_ssi_object(inode, vmf->pgoff);
	err = zoid_coherence_hold_fault(&sbi->coh, object, write, &token);
	if (err) {
		/*
		 * A signal: a user fault returns to take it and faults again;
		 * a fault of the kernel's (a copy to user memory) fails.
		 */
		if (err == -EINTR && (vmf->flags & FAULT_FLAG_USER))
			ret = VM_FAULT_NOPAGE;
		goto out;
	}
	ret = fault(vmf);
	zoid_coherence_fault_done(&sbi->coh, object, token);
out:
	fput(file);
	return ret;
}

static vm_fault_t zoidfs_ssi_fault(struct vm_fault *vmf)
{
	return zoidfs_ssi_fault_with(vmf, false, filemap_fault);
}

static vm_fault_t zoidfs_ssi_page_mkwrite(struct vm_fault *vmf)
{
	return zoidfs_ssi_fault_with(vmf, true, filemap_page_mkwrite);
}

static const struct vm_operations_struct zoidfs_ssi_vm_ops = {
	.fault = zoidfs_ssi_fault,
	.map_pages = filemap_map_pages,
	.page_mkwrite = zoidfs_ssi_page_mkwrite,
};

static int zoidfs_ssi_mmap(struct file *file, struct vm_area_struct *vma)
{
	int err = zoidfs_cached_mmap(file, vma);

	if (!err)
		vma->vm_ops = &zoidfs_ssi_vm_ops;
	return err;
}

/* Attaches the mount to its ssi set (a clear word if that cannot be). */
static int zoidfs_ssi_attach(struct fs_context *fc, struct zoidfs_sb *sbi)
{
	const struct zoid_coherence_client client = {
		.ctx = sbi,
		.insert = zoidfs_ssi_insert,
		.invalidate = zoidfs_ssi_invalidate,
		.export = zoidfs_ssi_export,
		/* umount -f: page holds give up too (valid until detach). */
		.abort = &sbi->conn.abort,
	};
	const char *set = sbi->ssi_set;
	int err = zoid_coherence_attach(set, strlen(set), &client, &sbi->coh);

	switch (err) {
	case 0:
		return 0;
	case -ENODEV:
		return errorfc(fc, "consistency=ssi needs ssi.ko loaded on this CN"), err;
	case -ENOENT:
		return errorfc(fc, "no ssi set \"%s\" here: define it on the ION (/sys/kernel/ssi/sets)",
			       set), err;
	case -EBUSY:
		return errorfc(fc, "ssi set \"%s\" is another mount's", set), err;
	default:
		return errorfc(fc, "ssi set \"%s\": attach failed (%d)", set, err), err;
	}
}

/* consistency=ssi: as cache=strict|loose, every access under its page's object. */
static const struct file_operations zoidfs_ssi_fops = {
	.owner = THIS_MODULE,
	.open = zoidfs_cached_open,
	.flush = zoidfs_ssi_flush,
	.llseek = zoidfs_ssi_llseek,
	.read_iter = zoidfs_ssi_read_iter,
	.write_iter = zoidfs_ssi_write_iter,
	.mmap = zoidfs_ssi_mmap,
	.fsync = zoidfs_cached_fsync,
	.splice_read = copy_splice_read,
	.splice_write = iter_file_splice_write,
};

/* ---- Extended attributes: user.* and trusted.*, forwarded (not cached) ---- */

static int zoidfs_xattr_get(const struct xattr_handler *handler, struct dentry *dentry,
			    struct inode *inode, const char *name, void *buf, size_t size)
{
	const char *full = xattr_full_name(handler, name);

	return zoidfs_stale_retry(inode, zoidfs_rs_getxattr(zconn(inode), &ZI(inode)->fh, full,
							    strlen(full), buf, size));
}

static int zoidfs_xattr_set(const struct xattr_handler *handler, struct mnt_idmap *idmap,
			    struct dentry *dentry, struct inode *inode, const char *name,
			    const void *value, size_t size, int flags)
{
	const char *full = xattr_full_name(handler, name);
	int err;

	if (value)
		err = zoidfs_stale_retry(inode, zoidfs_rs_setxattr(zconn(inode), &ZI(inode)->fh,
								   full, strlen(full), value,
								   size, flags));
	else
		err = zoidfs_stale_retry(inode, zoidfs_rs_removexattr(zconn(inode),
								      &ZI(inode)->fh, full,
								      strlen(full)));
	/* The ION changed the ctime. */
	zoidfs_attr_stale(inode);
	return err;
}

static ssize_t zoidfs_listxattr(struct dentry *dentry, char *buf, size_t size)
{
	struct inode *inode = d_inode(dentry);

	return zoidfs_stale_retry(inode, zoidfs_rs_listxattr(zconn(inode), &ZI(inode)->fh, buf,
							     size));
}

static const struct xattr_handler zoidfs_user_xattr = {
	.prefix = XATTR_USER_PREFIX,
	.get = zoidfs_xattr_get,
	.set = zoidfs_xattr_set,
};

static const struct xattr_handler zoidfs_trusted_xattr = {
	.prefix = XATTR_TRUSTED_PREFIX,
	.get = zoidfs_xattr_get,
	.set = zoidfs_xattr_set,
};

static const struct xattr_handler * const zoidfs_xattr_handlers[] = {
	&zoidfs_user_xattr,
	&zoidfs_trusted_xattr,
	NULL,
};

/* ---- POSIX ACLs (mount option acl, the default): forwarded, cached ---- */

#ifdef CONFIG_FS_POSIX_ACL
/*
 * The ACL of `type` from the ION, in the xattr form getxattr(2) gives
 * (ids unmapped, as owners are).  None without a call when the last
 * attributes said the object has none.
 */
static struct posix_acl *zoidfs_fetch_acl(struct inode *inode, int type)
{
	const char *name = posix_acl_xattr_name(type);
	u32 flag = type == ACL_TYPE_ACCESS ? ZOIDFS_HAS_ACL : ZOIDFS_HAS_DEFAULT_ACL;
	struct posix_acl *acl;
	size_t size = PAGE_SIZE;
	ssize_t n;
	void *buf;

	if (!(READ_ONCE(ZI(inode)->acl) & flag))
		return NULL;
	for (;;) {
		buf = kvmalloc(size, GFP_KERNEL);
		if (!buf)
			return ERR_PTR(-ENOMEM);
		n = zoidfs_stale_retry(inode, zoidfs_rs_getxattr(zconn(inode), &ZI(inode)->fh,
								 name, strlen(name), buf, size));
		if (n != -ERANGE || size == XATTR_SIZE_MAX)
			break;
		kvfree(buf);
		size = XATTR_SIZE_MAX;	/* more than 500 entries */
	}
	if (n == -ENODATA || n == -EOPNOTSUPP)
		acl = NULL;
	else if (n < 0)
		acl = ERR_PTR(n);
	else
		acl = posix_acl_from_xattr(&init_user_ns, buf, n);
	kvfree(buf);
	return acl;
}

/* Permission checks (generic_permission): not under RCU, it may call. */
static struct posix_acl *zoidfs_get_inode_acl(struct inode *inode, int type, bool rcu)
{
	if (rcu)
		return ERR_PTR(-ECHILD);
	return zoidfs_fetch_acl(inode, type);
}

/* getxattr(2) of system.posix_acl_* (through vfs_get_acl). */
static struct posix_acl *zoidfs_get_acl(struct mnt_idmap *idmap, struct dentry *dentry,
					int type)
{
	return zoidfs_fetch_acl(d_inode(dentry), type);
}

/*
 * setxattr(2) and removexattr(2) of system.posix_acl_*: the ION's
 * filesystem checks and applies it (an access ACL's mask becomes the
 * mode's group bits there), then the new mode and ctime are fetched.
 */
static int zoidfs_set_acl(struct mnt_idmap *idmap, struct dentry *dentry,
			  struct posix_acl *acl, int type)
{
	struct inode *inode = d_inode(dentry);
	const char *name = posix_acl_xattr_name(type);
	size_t size;
	void *value;
	int err;

	if (acl) {
		value = posix_acl_to_xattr(&init_user_ns, acl, &size, GFP_KERNEL);
		if (!value)
			return -ENOMEM;
		err = zoidfs_stale_retry(inode, zoidfs_rs_setxattr(zconn(inode), &ZI(inode)->fh,
								   name, strlen(name), value,
								   size, 0));
		kfree(value);
	} else {
		err = zoidfs_stale_retry(inode, zoidfs_rs_removexattr(zconn(inode),
								      &ZI(inode)->fh, name,
								      strlen(name)));
	}
	if (err)
		return err;
	zoidfs_revalidate(inode, true);
	set_cached_acl(inode, type, acl);
	return 0;
}
#define ZOIDFS_ACL_IOPS					\
	.get_inode_acl = zoidfs_get_inode_acl,		\
	.get_acl = zoidfs_get_acl,			\
	.set_acl = zoidfs_set_acl,
#else
#define ZOIDFS_ACL_IOPS
#endif

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
	.mknod = zoidfs_mknod,
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
	.listxattr = zoidfs_listxattr,
	ZOIDFS_ACL_IOPS
};

/* Regular files and special files (fifos, sockets, devices). */
static const struct inode_operations zoidfs_file_iops = {
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
	.listxattr = zoidfs_listxattr,
	ZOIDFS_ACL_IOPS
};

static const struct inode_operations zoidfs_symlink_iops = {
	.get_link = zoidfs_get_link,
	.getattr = zoidfs_getattr,
	.setattr = zoidfs_setattr,
	.listxattr = zoidfs_listxattr,
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
	seq_printf(m, ",cache=%s", zoidfs_cache_modes[sbi->cache].name);
	if (sbi->relaxed)
		seq_puts(m, ",consistency=relaxed");
	if (sbi->ssi) {
		seq_puts(m, ",consistency=ssi");
		seq_show_option(m, "ssi_set", sbi->ssi_set);
	}
	if (sbi->cache != Cache_none)
		seq_printf(m, ",actimeo=%lu,acdirmin=%lu", sbi->actimeo / HZ, sbi->acdir / HZ);
	seq_printf(m, ",%s,timeo=%u,retrans=%u,rsize=%u,wsize=%u,inflight=%u",
		   sbi->hard ? "hard" : "soft", sbi->timeo, sbi->retrans, sbi->rsize,
		   sbi->wsize, sbi->inflight);
	seq_puts(m, root->d_sb->s_flags & SB_POSIXACL ? ",acl" : ",noacl");
	return 0;
}

/*
 * umount -f: the mount's calls in flight give up with EIO (a hard mount's
 * too, within 250 ms) and so do all that follow, consistency=ssi's waits
 * for a page's object included (ssi polls the same flag), so that the unmount
 * itself cannot hang on a dead ION.  Data not yet on the ION is lost (its
 * writers saw EIO).  If the unmount then fails (EBUSY: files still open),
 * the mount stays dead: every call fails until it is unmounted.
 */
static void zoidfs_umount_begin(struct super_block *sb)
{
	atomic_set(&ZSB(sb)->conn.abort, 1);
	zoidfs_rs_count_forced_umount();
}

static const struct super_operations zoidfs_sops = {
	.alloc_inode = zoidfs_alloc_inode,
	.free_inode = zoidfs_free_inode,
	.drop_inode = zoidfs_drop_inode,
	.statfs = zoidfs_statfs,
	.evict_inode = zoidfs_evict_inode,
	.write_inode = zoidfs_write_inode,
	.show_options = zoidfs_show_options,
	.umount_begin = zoidfs_umount_begin,
};

/* ---- Mounting ---- */

enum { Opt_ion, Opt_export, Opt_cache, Opt_actimeo, Opt_acdirmin, Opt_timeo, Opt_retrans, Opt_soft,
	Opt_hard, Opt_rsize, Opt_wsize, Opt_inflight, Opt_consistency, Opt_ssi_set, Opt_acl };

static const struct fs_parameter_spec zoidfs_params[] = {
	fsparam_u32("ion", Opt_ion),
	fsparam_string("export", Opt_export),
	fsparam_enum("cache", Opt_cache, zoidfs_cache_modes),
	fsparam_u32("actimeo", Opt_actimeo),
	fsparam_u32("acdirmin", Opt_acdirmin),
	fsparam_u32("timeo", Opt_timeo),
	fsparam_u32("retrans", Opt_retrans),
	fsparam_flag("soft", Opt_soft),
	fsparam_flag("hard", Opt_hard),
	fsparam_flag_no("acl", Opt_acl),
	fsparam_u32("rsize", Opt_rsize),
	fsparam_u32("wsize", Opt_wsize),
	fsparam_u32("inflight", Opt_inflight),
	fsparam_enum("consistency", Opt_consistency, zoidfs_consistency_modes),
	fsparam_string("ssi_set", Opt_ssi_set),
	{}
};

/* What the mount options asked for (fs_context's private data). */
struct zoidfs_ctx {
	u32 ion;		/* U32_MAX: the CN's ION, whichever it is */
	char *export;
	char *ssi_set;		/* NULL: ZOIDFS_SSI_SET */
	int cache;
	bool cache_given;	/* cache= was written */
	u32 actimeo;		/* seconds */
	bool actimeo_given;	/* actimeo= was written */
	u32 acdirmin;		/* seconds; U32_MAX: not written */
	u32 timeo;
	u32 retrans;
	u32 rsize;
	u32 wsize;
	u32 inflight;
	int consistency;
	bool hard;
	bool acl;		/* POSIX ACLs (noacl: off) */
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
		ctx->cache = result.uint_32;
		ctx->cache_given = true;
		break;
	case Opt_ssi_set:
		/* As ssi names sets: 1 to 32 letters, digits, '_', '-', '.'. */
		if (!*param->string || strlen(param->string) > 32 ||
		    strspn(param->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789_-.") != strlen(param->string))
			return invalfc(fc, "ssi_set=%s is not a set name", param->string);
		kfree(ctx->ssi_set);
		ctx->ssi_set = param->string;
		param->string = NULL;
		break;
	case Opt_consistency:
		ctx->consistency = result.uint_32;
		break;
	case Opt_actimeo:
		if (result.uint_32 > 3600)
			return invalfc(fc, "actimeo=%u out of range (0..3600 seconds)",
				       result.uint_32);
		ctx->actimeo = result.uint_32;
		ctx->actimeo_given = true;
		break;
	case Opt_acdirmin:
		if (result.uint_32 > 3600)
			return invalfc(fc, "acdirmin=%u out of range (0..3600 seconds)",
				       result.uint_32);
		ctx->acdirmin = result.uint_32;
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
	case Opt_acl:
		if (!result.negated && !IS_ENABLED(CONFIG_FS_POSIX_ACL))
			return invalfc(fc, "acl: this kernel has no POSIX ACLs (CONFIG_FS_POSIX_ACL)");
		ctx->acl = !result.negated;
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
	case Opt_inflight:
		if (!result.uint_32 || result.uint_32 > ZOIDFS_INFLIGHT_MAX)
			return invalfc(fc, "inflight=%u out of range (1..%u)", result.uint_32,
				       ZOIDFS_INFLIGHT_MAX);
		ctx->inflight = result.uint_32;
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

	if (ctx->consistency == Consistency_relaxed && ctx->cache != Cache_none)
		return invalfc(fc, "consistency=relaxed decides caching per file: use it with cache=none");
	if (ctx->consistency == Consistency_ssi && ctx->cache == Cache_none) {
		if (ctx->cache_given)
			return invalfc(fc, "consistency=ssi caches pages: use it with cache=strict or cache=loose");
		ctx->cache = Cache_loose;
	}
	if (ctx->ssi_set && ctx->consistency != Consistency_ssi)
		return invalfc(fc, "ssi_set= goes with consistency=ssi");
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sb->s_fs_info = sbi;
	INIT_LIST_HEAD(&sbi->relaxed_sbs);
	spin_lock_init(&sbi->ssi_lock);
	INIT_LIST_HEAD(&sbi->ssi_inodes);
	sbi->ssi = ctx->consistency == Consistency_ssi;
	if (sbi->ssi) {
		sbi->ssi_set = ctx->ssi_set ? ctx->ssi_set : kstrdup(ZOIDFS_SSI_SET, GFP_KERNEL);
		ctx->ssi_set = NULL;
		if (!sbi->ssi_set)
			return -ENOMEM;
	}
	sbi->sb = sb;
	sbi->cache = ctx->cache;
	sbi->relaxed = ctx->consistency == Consistency_relaxed;
	sbi->actimeo = (unsigned long)ctx->actimeo * HZ;
	/*
	 * Positive dentries: acdirmin= if written; else, as NFS's actimeo sets
	 * every timeout, actimeo= if written; else NFS's acdirmin (30 s) for
	 * a cache=loose that was asked for, and actimeo's default for strict
	 * and for consistency=ssi's implied loose.
	 */
	if (ctx->acdirmin != U32_MAX)
		sbi->acdir = (unsigned long)ctx->acdirmin * HZ;
	else if (ctx->actimeo_given || ctx->cache != Cache_loose || !ctx->cache_given)
		sbi->acdir = sbi->actimeo;
	else
		sbi->acdir = (unsigned long)ZOIDFS_ACDIRMIN_LOOSE * HZ;
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
	sbi->inflight = ctx->inflight;

	err = zoidfs_rs_root(&sbi->conn, export, strlen(export), &sbi->root, &a);
	if (err == -ENOENT)
		return errorfc(fc, "ION %u has no export \"%s\"", ion, export), err;
	if (err)
		return errorfc(fc, "ION %u: root of export \"%s\" failed (%d)", ion, export,
			       err), err;
	if (!S_ISDIR(a.mode))
		return errorfc(fc, "export root is not a directory"), -ENOTDIR;

	/* Its own writeback context, so that dirty pages are written back. */
	err = super_setup_bdi(sb);
	if (err)
		return err;
	/* A readahead window keeps `inflight` reads on the wire. */
	sb->s_bdi->ra_pages = max(2U, sbi->inflight) * sbi->rsize / PAGE_SIZE;
	sb->s_bdi->io_pages = sbi->rsize / PAGE_SIZE;
	if (sbi->ssi) {
		/*
		 * Each page is read under its own object: no readahead, and
		 * none forced (fadvise, madvise: io_pages) either.
		 */
		sb->s_bdi->ra_pages = 0;
		sb->s_bdi->io_pages = 0;
		err = zoidfs_ssi_attach(fc, sbi);
		if (err)
			return err;
	}
	sb->s_magic = ZOIDFS_MAGIC;
	sb->s_op = &zoidfs_sops;
	sb->s_xattr = zoidfs_xattr_handlers;
	set_default_d_op(sb, &zoidfs_dentry_ops);
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_time_gran = 1;
	sb->s_flags |= SB_NOATIME;
	if (ctx->acl)
		sb->s_flags |= SB_POSIXACL;
	root = zoidfs_iget(sb, &sbi->root, &a, 0);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	if (sbi->relaxed) {
		mutex_lock(&zoidfs_relaxed_lock);
		list_add(&sbi->relaxed_sbs, &zoidfs_relaxed_sbs);
		mutex_unlock(&zoidfs_relaxed_lock);
	}
	pr_info("zoidfs: mounted export \"%s\" of ION %u (cache=%s%s%s, rsize %u, wsize %u, inflight %u, %s)\n",
		export, ion, zoidfs_cache_modes[sbi->cache].name,
		sbi->relaxed ? ", consistency=relaxed" : "",
		sbi->ssi ? ", consistency=ssi" : "", sbi->rsize, sbi->wsize,
		sbi->inflight, sbi->hard ? "hard" : "soft");
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
		kfree(ctx->ssi_set);
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
	ctx->cache = Cache_none;
	ctx->actimeo = 3;	/* NFS's acregmin */
	ctx->acdirmin = U32_MAX;
	ctx->timeo = 600;	/* 60 s, like NFS over TCP */
	ctx->retrans = 2;
	ctx->inflight = ZOIDFS_INFLIGHT_DEFAULT;
	ctx->hard = true;
	ctx->acl = IS_ENABLED(CONFIG_FS_POSIX_ACL);
	fc->fs_private = ctx;
	fc->ops = &zoidfs_context_ops;
	return 0;
}

static void zoidfs_kill_sb(struct super_block *sb)
{
	struct zoidfs_sb *sbi = ZSB(sb);

	/* Off the recall list (recalls hold active references, not this). */
	if (sbi && !list_empty(&sbi->relaxed_sbs)) {
		mutex_lock(&zoidfs_relaxed_lock);
		list_del_init(&sbi->relaxed_sbs);
		mutex_unlock(&zoidfs_relaxed_lock);
	}
	/*
	 * Written back and committed while the dentries are still there:
	 * generic_shutdown_super() drops them before it syncs, and a handle
	 * the rebooted ION finds stale is reconnected by its name.  And for
	 * consistency=ssi, while ssi still calls us; then no more calls (no
	 * file is open: nothing is cached that another CN could need from us
	 * after this).
	 */
	if (sbi && sb->s_root)
		sync_filesystem(sb);
	if (sbi && sbi->coh.ops)
		zoid_coherence_detach(&sbi->coh);
	kill_anon_super(sb);
	if (sbi) {
		kfree(sbi->export);
		kfree(sbi->ssi_set);
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
	zoidfs_recall_wq = alloc_workqueue("zoidfs_recall", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!zoidfs_recall_wq) {
		err = -ENOMEM;
		goto out_cache;
	}
	err = zoid_client_set_upcall(ZOIDFS_PLUGIN, zoidfs_upcall);
	if (err) {
		pr_err("zoidfs: cannot take zoid's upcalls (%d)\n", err);
		goto out_wq;
	}
	err = register_filesystem(&zoidfs_fs_type);
	if (!err)
		return 0;
	zoid_client_set_upcall(ZOIDFS_PLUGIN, NULL);
out_wq:
	destroy_workqueue(zoidfs_recall_wq);
out_cache:
	kmem_cache_destroy(zoidfs_inode_cache);
	return err;
}

void zoidfs_unregister(void)
{
	unregister_filesystem(&zoidfs_fs_type);
	zoid_client_set_upcall(ZOIDFS_PLUGIN, NULL);
	destroy_workqueue(zoidfs_recall_wq);
	/* Inodes are freed after an RCU grace period. */
	rcu_barrier();
	kmem_cache_destroy(zoidfs_inode_cache);
}

MODULE_ALIAS_FS("zoidfs");
