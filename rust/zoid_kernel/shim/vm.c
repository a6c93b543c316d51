// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel shim: user mappings whose pages a module fills at fault time
 * (rust/zoid_kernel/vm.rs), and the kernel pages those mappings show.
 */
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>

#include "zoid_kernel_shim.h"

void *zk_page_alloc(void)
{
	return (void *)get_zeroed_page(GFP_KERNEL);
}

void zk_page_free(void *addr)
{
	free_page((unsigned long)addr);
}

/*
 * An address space of its own for the files of a device, as DRM does
 * (drm_fs_inode_new): the mapping of an anonymous inode on a private
 * pseudo filesystem.  Every mapping made through such a file is in its
 * i_mmap tree, so unmap_mapping_pages() finds them all, whichever device
 * node was opened.  The filesystem has no owner: the module releases its
 * mount (MNT_INTERNAL: torn down at once) before it goes.
 */
static int zk_vmfs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, 0x5a564d46 /* "ZVMF" */) ? 0 : -ENOMEM;
}

static struct file_system_type zk_vmfs_type = {
	.name = "zoid_vm",
	.init_fs_context = zk_vmfs_init_fs_context,
	.kill_sb = kill_anon_super,
};
static struct vfsmount *zk_vmfs_mnt;
static int zk_vmfs_count;

struct inode *zk_mapping_alloc(void)
{
	struct inode *inode;
	int err = simple_pin_fs(&zk_vmfs_type, &zk_vmfs_mnt, &zk_vmfs_count);

	if (err)
		return NULL;
	inode = alloc_anon_inode(zk_vmfs_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		simple_release_fs(&zk_vmfs_mnt, &zk_vmfs_count);
		return NULL;
	}
	return inode;
}

void zk_mapping_free(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&zk_vmfs_mnt, &zk_vmfs_count);
}

void zk_mapping_attach(struct file *file, struct inode *inode)
{
	file->f_mapping = inode->i_mapping;
}

/* Removes every user mapping of pages [first, first + count). */
void zk_mapping_zap(struct inode *inode, unsigned long first,
		    unsigned long count)
{
	unmap_mapping_pages(inode->i_mapping, first, count, true);
}

/*
 * Makes @vma a shared mapping of raw pages filled by @ops->fault: no
 * struct page reference is taken (VM_PFNMAP), so the module must zap a
 * page's mappings before it frees the page.  Private (copy-on-write)
 * mappings are refused: a copy would not follow the page.
 */
int zk_vm_setup(struct vm_area_struct *vma,
		const struct vm_operations_struct *ops, void *owner)
{
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = ops;
	vma->vm_private_data = owner;
	return 0;
}

void *zk_vm_owner(struct vm_area_struct *vma)
{
	return vma->vm_private_data;
}

void *zk_vmf_owner(struct vm_fault *vmf)
{
	return vmf->vma->vm_private_data;
}

unsigned long zk_vmf_pgoff(struct vm_fault *vmf)
{
	return vmf->pgoff;
}

bool zk_vmf_is_write(struct vm_fault *vmf)
{
	return vmf->flags & FAULT_FLAG_WRITE;
}

/*
 * Maps the kernel page at @addr where @vmf faulted: read-only (a later
 * write calls ->pfn_mkwrite) unless @writable.
 */
vm_fault_t zk_vmf_map(struct vm_fault *vmf, void *addr, bool writable)
{
	struct vm_area_struct *vma = vmf->vma;
	pgprot_t prot = writable ? vm_get_page_prot(vma->vm_flags)
				 : vma->vm_page_prot;

	return vmf_insert_pfn_prot(vma, vmf->address, page_to_pfn(virt_to_page(addr)),
				   prot);
}

/* What a fault handler's error means to the faulting task. */
vm_fault_t zk_vm_fault_error(int err)
{
	switch (err) {
	case -ENOMEM:
		return VM_FAULT_OOM;
	case -EINTR:
	case -ERESTARTSYS:
		/* Nothing mapped: the access runs again after the signal. */
		return VM_FAULT_NOPAGE;
	default:
		return VM_FAULT_SIGBUS;
	}
}
