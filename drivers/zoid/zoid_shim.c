// SPDX-License-Identifier: GPL-2.0
/*
 * zoid C shim: the shared rust/zoid_kernel shims (kernel threads,
 * netdevice frames), module-local.
 */
#include <linux/moduleparam.h>

#include "../../rust/zoid_kernel/shim/all.c"

/*
 * `export=/path`: the unix (and default zoidfs) export from the moment
 * zoid answers its first call, so that an ION that restarts serves the
 * handles its CNs hold at once (also /sys/kernel/zoid/export).
 */
static char *export = "";
module_param(export, charp, 0444);
MODULE_PARM_DESC(export, "Directory exported to the CNs at load (as /sys/kernel/zoid/export)");

const char *zoid_param_export(void);
const char *zoid_param_export(void) { return export; }

/*
 * `test_plugins=1`: the test plug-in ztest (null, echo, sleep_ms, ...,
 * for tests and benchmarks) starts enabled; off by default, since any
 * CN may call it (a sleep of a minute per call, replies of any size).
 * /sys/kernel/zoid/modules turns it on and off at run time either way.
 */
static bool test_plugins;
module_param(test_plugins, bool, 0444);
MODULE_PARM_DESC(test_plugins, "Enable the test plug-in ztest at load (default: off)");

bool zoid_param_test_plugins(void);
bool zoid_param_test_plugins(void) { return test_plugins; }

/* The plug-in ABI (drivers/zoid/extern_plugin.rs implements it). */
#include "zoid_plugin.h"
EXPORT_SYMBOL_GPL(zoid_plugin_register);
EXPORT_SYMBOL_GPL(zoid_plugin_unregister);
EXPORT_SYMBOL_GPL(zoid_defer);
EXPORT_SYMBOL_GPL(zoid_deferred_reply);

/* The client ABI (drivers/zoid/client_abi.rs implements it). */
#include "zoid_client.h"
EXPORT_SYMBOL_GPL(zoid_client_abi);
EXPORT_SYMBOL_GPL(zoid_client_ion);
EXPORT_SYMBOL_GPL(zoid_client_session);
EXPORT_SYMBOL_GPL(zoid_client_set_upcall);
EXPORT_SYMBOL_GPL(zoid_call);
EXPORT_SYMBOL_GPL(zoid_call_start);
EXPORT_SYMBOL_GPL(zoid_call_wait);
EXPORT_SYMBOL_GPL(zoid_reply_len);
EXPORT_SYMBOL_GPL(zoid_reply_read);
EXPORT_SYMBOL_GPL(zoid_reply_free);
