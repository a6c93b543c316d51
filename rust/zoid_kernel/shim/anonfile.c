// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: files with no name (anon inodes) whose read, write,
 * ioctl and release are Rust functions, and installing a file as a new
 * descriptor.  The Rust side is rust/zoid_kernel/anonfile.rs.
 */
#include <linux/anon_inodes.h>
#include <linux/compat.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>

#include "zoid_kernel_shim.h"

/* What a file's private data points to: the Rust object and its table. */
struct zk_anon {
	const struct zk_anon_ops *ops;
	void *ctx;
};

static ssize_t zk_anon_read(struct file *f, char __user *buf, size_t len, loff_t *pos)
{
	struct zk_anon *a = f->private_data;

	return a->ops->read(a->ctx, buf, len, f->f_flags & O_NONBLOCK);
}

static ssize_t zk_anon_write(struct file *f, const char __user *buf, size_t len,
			     loff_t *pos)
{
	struct zk_anon *a = f->private_data;

	return a->ops->write(a->ctx, buf, len, f->f_flags & O_NONBLOCK);
}

static long zk_anon_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct zk_anon *a = f->private_data;

	return a->ops->ioctl(a->ctx, cmd, arg);
}

static int zk_anon_release(struct inode *inode, struct file *f)
{
	struct zk_anon *a = f->private_data;

	a->ops->release(a->ctx);
	kfree(a);
	return 0;
}

static const struct file_operations zk_anon_fops = {
	.owner = THIS_MODULE,
	.read = zk_anon_read,
	.write = zk_anon_write,
	.unlocked_ioctl = zk_anon_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = zk_anon_release,
	.llseek = noop_llseek,
};

/*
 * A new file named @name, open for @flags (O_RDONLY, O_WRONLY or O_RDWR,
 * O_NONBLOCK), whose operations are @ops on @ctx; @ops->release(@ctx) runs
 * when its last reference goes.  NULL on failure (@ctx is then not
 * released: the caller still owns it).
 */
struct file *zk_anon_file(const char *name, const struct zk_anon_ops *ops, void *ctx,
			  int flags)
{
	struct zk_anon *a = kmalloc(sizeof(*a), GFP_KERNEL);
	struct file *f;

	if (!a)
		return NULL;
	a->ops = ops;
	a->ctx = ctx;
	f = anon_inode_getfile(name, &zk_anon_fops, a, flags);
	if (IS_ERR(f)) {
		kfree(a);
		return NULL;
	}
	return f;
}

/* Installs a new reference to @f as the calling process's lowest free
 * descriptor: the descriptor, or a negative errno. */
int zk_file_install(struct file *f, bool cloexec)
{
	int fd = get_unused_fd_flags(cloexec ? O_CLOEXEC : 0);

	if (fd < 0)
		return fd;
	fd_install(fd, get_file(f));
	return fd;
}

/* A descriptor number reserved in the calling process (O_CLOEXEC), for
 * zk_fd_install or zk_fd_unreserve: the number, or a negative errno. */
int zk_fd_reserve(void)
{
	return get_unused_fd_flags(O_CLOEXEC);
}

/* Installs a new reference to @f as the reserved descriptor @fd. */
void zk_fd_install(int fd, struct file *f)
{
	fd_install(fd, get_file(f));
}

void zk_fd_unreserve(int fd)
{
	put_unused_fd(fd);
}

void zk_anon_put(struct file *f)
{
	fput(f);
}
