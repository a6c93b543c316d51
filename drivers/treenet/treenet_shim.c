// SPDX-License-Identifier: GPL-2.0
/*
 * treenet C shim: what has no Rust binding in 7.3.
 *
 * - the shared netdevice and kthread shims of rust/zoid_kernel (included
 *   here, module-local);
 * - string module parameters (`devices=eth0,eth1 node_id=3 role=cn pset=0`);
 * - exports of treenet's cross-module interface.  zoid modules cross .ko
 *   boundaries through C-ABI functions: the provider defines them in Rust
 *   (#[no_mangle] extern "C") and exports them here; a consumer declares
 *   them in the provider's abi.rs and links through KBUILD_EXTRA_SYMBOLS.
 *   See docs/architecture.md and docs/treenet.md;
 * - the static keys and the dispatcher of the ssi hook points
 *   (zoid_hooks.c: every zoid module depends on treenet);
 * - the meeting point of ssi's page coherence and its clients
 *   (zoid_coherence.c: zoidfs loads before ssi).
 */
#include <linux/export.h>
#include <linux/moduleparam.h>
#include <linux/types.h>

#include "../../rust/zoid_kernel/shim/all.c"
#include "../../rust/zoid_kernel/shim/zoid_hooks.c"
#include "../../rust/zoid_kernel/shim/zoid_coherence.c"

static char *devices = "";
module_param(devices, charp, 0444);
MODULE_PARM_DESC(devices, "Comma-separated netdevices to bind at load (or \"loopback\")");
static int node_id;
module_param(node_id, int, 0444);
MODULE_PARM_DESC(node_id, "This node's id in its pset (also /sys/kernel/treenet/node_id)");
static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "ion or cn (default cn)");
static int pset;
module_param(pset, int, 0444);
MODULE_PARM_DESC(pset, "pset number (nodes of other psets are ignored)");

const char *treenet_param_devices(void);
int treenet_param_node_id(void);
const char *treenet_param_role(void);
int treenet_param_pset(void);

const char *treenet_param_devices(void) { return devices; }
int treenet_param_node_id(void) { return node_id; }
const char *treenet_param_role(void) { return role; }
int treenet_param_pset(void) { return pset; }

/* The kernel API (drivers/treenet/api.rs, docs/treenet.md). */
struct treenet_ops;
struct treenet_msg;
u64 treenet_abi_version(void);
int treenet_register(u16 channel, const struct treenet_ops *ops, void *ctx);
void treenet_unregister(u16 channel);
int treenet_send(u16 channel, u16 dst, const u8 *data, size_t len, bool block);
size_t treenet_msg_len(const struct treenet_msg *msg);
int treenet_msg_read(const struct treenet_msg *msg, size_t offset, u8 *buf, size_t len);
void treenet_msg_put(struct treenet_msg *msg);
struct treenet_msg_builder;
struct treenet_msg_builder *treenet_msg_new(size_t len);
struct treenet_msg_builder *treenet_msg_new_for_filling(size_t len);
struct treenet_msg_builder *treenet_msg_new_unzeroed(size_t len);
int treenet_msg_write(struct treenet_msg_builder *b, size_t offset, const u8 *data, size_t len);
int treenet_msg_write_user(struct treenet_msg_builder *b, size_t offset, void __user *src,
			   size_t len);
struct treenet_msg *treenet_msg_seal(struct treenet_msg_builder *b);
void treenet_msg_abort(struct treenet_msg_builder *b);
int treenet_send_msg(u16 channel, u16 dst, const struct treenet_msg *msg, bool block);
int treenet_msg_read_user(const struct treenet_msg *msg, size_t offset, void __user *dst,
			  size_t len);
const u8 *treenet_msg_map(const struct treenet_msg *msg);
void treenet_msg_unmap(const struct treenet_msg *msg, const u8 *addr);
u8 *treenet_msg_builder_map(struct treenet_msg_builder *b);
void treenet_msg_builder_unmap(struct treenet_msg_builder *b, u8 *addr);
int treenet_msg_truncate(struct treenet_msg_builder *b, size_t len);
int treenet_node_id(void);
bool treenet_reachable(u16 node);
int treenet_drive_until(u16 channel, const u32 *done, long timeout);
int treenet_ion(void);
bool treenet_is_below(u16 node);
int treenet_nodes_below(u16 *out, size_t cap);

EXPORT_SYMBOL_GPL(treenet_abi_version);
EXPORT_SYMBOL_GPL(treenet_register);
EXPORT_SYMBOL_GPL(treenet_unregister);
EXPORT_SYMBOL_GPL(treenet_send);
EXPORT_SYMBOL_GPL(treenet_msg_len);
EXPORT_SYMBOL_GPL(treenet_msg_read);
EXPORT_SYMBOL_GPL(treenet_msg_put);
EXPORT_SYMBOL_GPL(treenet_msg_new);
EXPORT_SYMBOL_GPL(treenet_msg_new_for_filling);
EXPORT_SYMBOL_GPL(treenet_msg_new_unzeroed);
EXPORT_SYMBOL_GPL(treenet_msg_write);
EXPORT_SYMBOL_GPL(treenet_msg_write_user);
EXPORT_SYMBOL_GPL(treenet_msg_seal);
EXPORT_SYMBOL_GPL(treenet_msg_abort);
EXPORT_SYMBOL_GPL(treenet_send_msg);
EXPORT_SYMBOL_GPL(treenet_msg_read_user);
EXPORT_SYMBOL_GPL(treenet_msg_map);
EXPORT_SYMBOL_GPL(treenet_msg_unmap);
EXPORT_SYMBOL_GPL(treenet_msg_builder_map);
EXPORT_SYMBOL_GPL(treenet_msg_builder_unmap);
EXPORT_SYMBOL_GPL(treenet_msg_truncate);
EXPORT_SYMBOL_GPL(treenet_node_id);
EXPORT_SYMBOL_GPL(treenet_reachable);
EXPORT_SYMBOL_GPL(treenet_drive_until);
EXPORT_SYMBOL_GPL(treenet_ion);
EXPORT_SYMBOL_GPL(treenet_is_below);
EXPORT_SYMBOL_GPL(treenet_nodes_below);
