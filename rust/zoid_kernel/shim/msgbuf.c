// SPDX-License-Identifier: GPL-2.0
/*
 * Message pages to user memory (rust/zoid_kernel/msgbuf.rs): 7.3's Page
 * can copy from user memory but not to it; and a message's pages mapped
 * contiguously (vmap), which 7.3's kernel crate has no binding for.
 */
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "zoid_kernel_shim.h"

unsigned long zk_page_copy_to_user(struct page *page, size_t offset, void __user *dst,
				   size_t len)
{
	void *va = kmap_local_page(page);
	unsigned long left = copy_to_user(dst, va + offset, len);

	kunmap_local(va);
	return left;
}

void *zk_vmap_pages(struct page **pages, unsigned int count)
{
	return vmap(pages, count, VM_MAP, PAGE_KERNEL);
}

void zk_vunmap(const void *addr)
{
	vunmap(addr);
}
