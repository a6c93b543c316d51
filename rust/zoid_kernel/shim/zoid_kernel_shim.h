/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the zoid_kernel C shims; the Rust side declares the same
 * functions in rust/zoid_kernel/{kthread,netlink,netdev,...}.rs.
 */
#ifndef ZOID_KERNEL_SHIM_H
#define ZOID_KERNEL_SHIM_H

#include <linux/types.h>

struct sk_buff;
struct zk_thread;
struct zk_netlink;
struct zk_ownlock;
struct lock_class_key;
struct file;
struct workqueue_struct;
struct zk_spawn;

/* A Rust object's file operations (rust/zoid_kernel/anonfile.rs). */
struct zk_anon_ops {
	ssize_t (*read)(void *ctx, char __user *buf, size_t len, bool nonblock);
	ssize_t (*write)(void *ctx, const char __user *buf, size_t len, bool nonblock);
	long (*ioctl)(void *ctx, unsigned int cmd, unsigned long arg);
	void (*release)(void *ctx);
};
struct file *zk_anon_file(const char *name, const struct zk_anon_ops *ops, void *ctx,
			  int flags);
int zk_file_install(struct file *f, bool cloexec);
int zk_fd_reserve(void);
void zk_fd_install(int fd, struct file *f);
void zk_fd_unreserve(int fd);
void zk_anon_put(struct file *f);

struct workqueue_struct *zk_spawn_wq_new(const char *name);
void zk_spawn_wq_destroy(struct workqueue_struct *wq);
struct zk_spawn *zk_spawn_new(struct file *stdio0, struct file *stdio1,
			      struct file *stdio2);
void zk_spawn_put(struct zk_spawn *s);
void zk_spawn_start(struct workqueue_struct *wq, struct zk_spawn *s, char **argv,
		    char **envp, void (*done)(void *ctx, int status), void *ctx);
int zk_spawn_signal(struct zk_spawn *s, int sig);

bool zk_current_is_admin(void);
s32 zk_current_tgid(void);
void zk_current_creds(u32 *tgid, u32 *uid, u32 *gid, u32 *groups,
		      u32 max_groups, u32 *ngroups);

struct zk_thread *zk_thread_alloc(void);
int zk_thread_start(struct zk_thread *t, int (*fn)(void *), void *data,
		    const char *name);
void zk_thread_stop(struct zk_thread *t);
void zk_thread_stop_free(struct zk_thread *t);
void zk_thread_kick(struct zk_thread *t);
void zk_thread_kick_thread(struct zk_thread *t);
void zk_thread_wake_at(struct zk_thread *t, u64 at_ns);
void zk_thread_wake_counts(struct zk_thread *t, u64 *kicks, u64 *thread_kicks,
			   u64 *timer_fires, u64 *timer_arms);
bool zk_thread_drive_begin(struct zk_thread *t);
void zk_thread_drive_end(struct zk_thread *t);
long zk_thread_drive_wait(struct zk_thread *t, const u32 *done, long timeout,
			  bool *kicked);
void zk_thread_wake_driver(struct zk_thread *t);
bool zk_thread_has_work(struct zk_thread *t);
unsigned long zk_stack_left(void);
int zk_thread_set_nice(struct zk_thread *t, int nice);
int zk_thread_nice(struct zk_thread *t, int *nice);
bool zk_thread_should_stop(void);
void zk_thread_wait(struct zk_thread *t, long timeout);

typedef bool (*zk_netlink_fast_fn)(void *ctx, const struct zk_netlink *l,
				   struct sk_buff *skb);
struct zk_netlink *zk_netlink_open(const char *ifname, u16 ethertype,
				   unsigned int rxq_limit,
				   struct zk_thread *kick, zk_netlink_fast_fn fast,
				   void *fast_ctx, int *err);
void zk_netlink_close(struct zk_netlink *l);
struct sk_buff *zk_netlink_rx(struct zk_netlink *l);
const u8 *zk_skb_data(const struct sk_buff *skb, unsigned int *len);
void zk_skb_src_mac(const struct sk_buff *skb, u8 *mac);
void zk_skb_free(struct sk_buff *skb);
unsigned int zk_netlink_mtu(const struct zk_netlink *l);
int zk_netlink_ifindex(const struct zk_netlink *l);
const char *zk_netlink_name(const struct zk_netlink *l);
bool zk_netlink_running(const struct zk_netlink *l);
u64 zk_netlink_rx_overflow(const struct zk_netlink *l);
u64 zk_netlink_tx_errors(const struct zk_netlink *l);
struct sk_buff *zk_netlink_tx_alloc(struct zk_netlink *l, unsigned int len, u8 **data);
int zk_netlink_tx(struct zk_netlink *l, struct sk_buff *skb, const u8 *dst);
void zk_netlink_tx_discard(struct sk_buff *skb);
void zk_netlink_tx_hold(struct zk_netlink *l, unsigned int max);
void zk_netlink_tx_flush(struct zk_netlink *l, unsigned int *b);
unsigned int zk_skb_napi_id(const struct sk_buff *skb);
bool zk_busy_poll(unsigned int napi_id, struct zk_thread *t, const u32 *done,
		  u64 until_ns);

/*
 * A string module parameter `name` (charp, mode 0444) with its default and
 * description, and its getter `zk_param_<name>()` for
 * rust/zoid_kernel/params.rs's `string_param!` (7.3's `module!` takes
 * integers and bools only).  Needs <linux/moduleparam.h>.
 */
#define ZK_STRING_PARAM(name, value, desc)			\
	static char *name = value;				\
	module_param(name, charp, 0444);			\
	MODULE_PARM_DESC(name, desc);				\
	const char *zk_param_##name(void);			\
	const char *zk_param_##name(void) { return name; }

/* netdev.c: a network device whose packets a Rust owner moves. */
struct zk_netdev;
/* The largest MTU (IPv4's largest packet). */
#define ZK_NETDEV_MAX_MTU 65535
/* The owner's counters, for ndo_get_stats64 (netdev.rs: Stats64). */
struct zk_netdev_stats {
	u64 rx_packets, tx_packets, rx_bytes, tx_bytes;
	u64 rx_dropped, tx_dropped, rx_errors, tx_errors;
};
/*
 * The owner's callbacks (netdev.rs: NetDevOps), from any context (xmit's
 * softirq, a stats reader under RCU): they must not sleep.
 */
struct zk_netdev_ops {
	/* Packets wait in the transmit queue: wake whoever dequeues them. */
	void (*kick)(void *ctx);
	/* Fills in the device's counters. */
	void (*stats)(void *ctx, struct zk_netdev_stats *stats);
};
struct zk_netdev *zk_netdev_register(const char *name, unsigned int mtu,
				     unsigned int tx_limit,
				     const struct zk_netdev_ops *ops, void *ctx,
				     int *err);
void zk_netdev_unregister(struct zk_netdev *nd);
struct sk_buff *zk_netdev_dequeue(struct zk_netdev *nd);
unsigned int zk_netdev_queued(const struct zk_netdev *nd);
void zk_netdev_wake_queue(struct zk_netdev *nd);
void zk_netdev_set_carrier(struct zk_netdev *nd, bool on);
bool zk_netdev_running(const struct zk_netdev *nd);
void zk_netdev_name(struct zk_netdev *nd, char *buf);
int zk_netdev_rx(struct zk_netdev *nd, const u8 *data, unsigned int len);
unsigned int zk_skb_len(const struct sk_buff *skb);
int zk_skb_copy(const struct sk_buff *skb, unsigned int offset, u8 *to,
		unsigned int len);
int zk_skb_finish_checksum(struct sk_buff *skb);
void zk_skb_consume(struct sk_buff *skb);
void zk_skb_drop(struct sk_buff *skb);

/* vfs.c: file operations under an exported directory. */
struct file;
struct cred;
struct zk_export;
struct zk_stat {
	u64 dev, ino, rdev, blocks;
	s64 size, atime_sec, mtime_sec, ctime_sec;
	u32 mode, nlink, uid, gid, blksize, atime_nsec, mtime_nsec, ctime_nsec;
};
struct zk_export *zk_export_open(const char *dir, int *err);
void zk_export_put(struct zk_export *e);
const struct cred *zk_creds_make(u32 uid, u32 gid, const u32 *groups,
				 u32 ngroups, int *err);
void zk_creds_put(const struct cred *c);
const struct cred *zk_creds_enter(const struct cred *c);
void zk_creds_leave(const struct cred *old);
struct file *zk_file_open(struct zk_export *e, const char *path, int flags,
			  u32 mode, int *err);
struct file *zk_file_open_below(struct file *dir, const char *path, int flags,
				u32 mode, int *err);
void zk_file_put(struct file *f);
ssize_t zk_file_read(struct file *f, void *buf, size_t n, s64 *pos);
ssize_t zk_file_write(struct file *f, const void *buf, size_t n, s64 *pos);
s64 zk_file_llseek(struct file *f, s64 off, int whence);
int zk_file_fsync(struct file *f, int datasync);
int zk_file_truncate(struct file *f, s64 len);
int zk_file_getattr(struct file *f, struct zk_stat *st);
int zk_file_getdents(struct file *f, u8 *buf, u32 size, u32 *used);
struct file *zk_file_fget(int fd, int *err);
int zk_file_chmod(struct file *f, u32 mode);
int zk_path_stat(struct zk_export *e, const char *path, bool follow,
		 struct zk_stat *st);
int zk_path_readlink(struct zk_export *e, const char *path, u8 *buf, u32 size);
int zk_path_mkdir(struct zk_export *e, const char *path, u32 mode);
int zk_path_symlink(struct zk_export *e, const char *target, const char *path);
int zk_path_remove(struct zk_export *e, const char *path, bool dir);
int zk_path_rename(struct zk_export *e, const char *from, const char *to);

/* vfs_obj.c: objects named by file handles (zoidfs). */
struct zk_obj;
struct zk_setattr {
	u32 valid, mode, uid, gid;
	s64 size, atime_sec, mtime_sec;
	u32 atime_nsec, mtime_nsec;
};
struct zk_statfs {
	u64 kind, blocks, bfree, bavail, files, ffree;
	u32 bsize, frsize, namelen;
};
u32 zk_export_id(struct zk_export *e);
void zk_obj_put(struct zk_obj *o);
struct zk_obj *zk_export_root_obj(struct zk_export *e, int *err);
int zk_obj_fh(struct zk_obj *o, u8 *buf, u32 cap);
struct zk_obj *zk_fh_resolve(struct zk_export *e, const u8 *fh, u32 len, int *err);
int zk_obj_stat(struct zk_obj *o, struct zk_stat *st);
struct zk_obj *zk_obj_lookup(struct zk_obj *dir, const char *name, u32 len, int *err);
struct zk_obj *zk_obj_create(struct zk_obj *dir, const char *name, u32 len, u32 mode,
			     int kind, const char *target, u32 rdev, int *err);
int zk_obj_link(struct zk_obj *o, struct zk_obj *dir, const char *name, u32 len);
int zk_obj_remove(struct zk_obj *dir, const char *name, u32 len, bool is_dir);
int zk_obj_rename(struct zk_obj *from_dir, const char *from, u32 from_len,
		  struct zk_obj *to_dir, const char *to, u32 to_len, u32 flags);
int zk_obj_readlink(struct zk_obj *o, u8 *buf, u32 size);
struct file *zk_obj_open(struct zk_obj *o, int access, int *err);
int zk_obj_setattr(struct zk_obj *o, const struct zk_setattr *s);
int zk_obj_statfs(struct zk_obj *o, struct zk_statfs *out);
ssize_t zk_obj_getxattr(struct zk_obj *o, const char *name, void *buf, u32 size);
ssize_t zk_obj_listxattr(struct zk_obj *o, char *buf, u32 size);
int zk_obj_setxattr(struct zk_obj *o, const char *name, const void *value, u32 size,
		    int flags);
int zk_obj_removexattr(struct zk_obj *o, const char *name);

/* umh.c */
int zk_run_helper(const char *path, char **argv, char **envp, bool wait);

/* msgbuf.c */
struct page;
unsigned long zk_page_copy_to_user(struct page *page, size_t offset, void __user *dst,
				   size_t len);
void *zk_vmap_pages(struct page **pages, unsigned int count);
void zk_vunmap(const void *addr);

/* vm.c: user mappings filled at fault time */
struct vm_area_struct;
struct vm_fault;
struct vm_operations_struct;
void *zk_page_alloc(void);
void zk_page_free(void *addr);
struct inode;
struct inode *zk_mapping_alloc(void);
void zk_mapping_free(struct inode *inode);
void zk_mapping_attach(struct file *file, struct inode *inode);
void zk_mapping_zap(struct inode *inode, unsigned long first, unsigned long count);
int zk_vm_setup(struct vm_area_struct *vma, const struct vm_operations_struct *ops,
		void *owner);
void *zk_vm_owner(struct vm_area_struct *vma);
void *zk_vmf_owner(struct vm_fault *vmf);
unsigned long zk_vmf_pgoff(struct vm_fault *vmf);
bool zk_vmf_is_write(struct vm_fault *vmf);
unsigned int zk_vmf_map(struct vm_fault *vmf, void *addr, bool writable);
unsigned int zk_vm_fault_error(int err);

/* procevents.c: fork/exec/exit through the scheduler's tracepoints. */
enum zk_proc_event { ZK_PROC_FORK = 0, ZK_PROC_EXEC = 1, ZK_PROC_EXIT = 2 };
struct zk_proc_probes;
/* What a probe passes on: kind (enum zk_proc_event), pid, tgid, other. */
typedef void (*zk_proc_fn)(void *ctx, u32 kind, s32 pid, s32 tgid, s32 other);
struct zk_proc_probes *zk_proc_probes_start(zk_proc_fn fn, void *ctx, int *err);
void zk_proc_probes_stop(struct zk_proc_probes *p);

/* ownlock.c */
void zk_ownlock_layout(size_t *v);
void zk_ownlock_init(struct zk_ownlock *l, const char *name, struct lock_class_key *key);
void zk_ownlock_lock(struct zk_ownlock *l);
void zk_ownlock_unlock(struct zk_ownlock *l);
int zk_ownlock_trylock(struct zk_ownlock *l);
void zk_ownlock_unlock_atomic(struct zk_ownlock *l);
void zk_ownlock_relock_atomic(struct zk_ownlock *l);
void zk_ownlock_assert_held(struct zk_ownlock *l);
void zk_local_bh_disable(void);
void zk_local_bh_enable(void);

#endif
