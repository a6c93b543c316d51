// SPDX-License-Identifier: GPL-2.0
/*
 * zoid C shim: the shared rust/zoid_kernel shims (kernel threads,
 * netdevice frames), module-local.
 */
#include "../../rust/zoid_kernel/shim/all.c"

/* The plug-in ABI (drivers/zoid/extern_plugin.rs implements it). */
#include "zoid_plugin.h"
EXPORT_SYMBOL_GPL(zoid_plugin_register);
EXPORT_SYMBOL_GPL(zoid_plugin_unregister);

/* The client ABI (drivers/zoid/client_abi.rs implements it). */
#include "zoid_client.h"
EXPORT_SYMBOL_GPL(zoid_client_abi);
EXPORT_SYMBOL_GPL(zoid_client_ion);
EXPORT_SYMBOL_GPL(zoid_call);
EXPORT_SYMBOL_GPL(zoid_reply_len);
EXPORT_SYMBOL_GPL(zoid_reply_read);
EXPORT_SYMBOL_GPL(zoid_reply_free);
