// SPDX-License-Identifier: GPL-2.0

//! `sample` (plug-in 16): the interface of `drivers/zoid_sample/`, a
//! plug-in that lives in its own module and registers with zoid through
//! the plug-in ABI (`drivers/zoid/zoid_plugin.h`).

zoid_plugin! {
    zoid = super::super;
    plugin(id = 16, name = "sample");

    /// Copies `s` upper-cased (ASCII) into `out`, at most `cap` bytes, and
    /// returns the length of `s`.
    fn upper(s: in str, out: out bytes[cap, len = ret], cap: in u32) = 1;

    /// Returns how many calls this load of the plug-in served, this one
    /// included.
    fn served() = 2;

    /// Waits for a second call with the same `key` (from any CN or
    /// process) and returns the other caller's node id; both calls return
    /// then.  The first one is answered later through the plug-in ABI's
    /// deferred replies (`zoid_defer()`), so a waiting call holds no
    /// worker.  Calls still waiting when the module unloads fail with
    /// `ECANCELED`; when 16 already wait, `EAGAIN`.
    fn meet(key: in u32) = 3;
}
