// SPDX-License-Identifier: GPL-2.0

//! treenet: zoid's tree-network driver.
//!
//! At this stage treenet owns the node's identity (its `node_id`) and the
//! suite's base interface: `/sys/kernel/treenet/` and the exported
//! `treenet_abi_version()` that zoid and ssi check when they load.  The
//! message transport arrives with the treenet issue.

use kernel::prelude::*;
use kernel::sync::{
    atomic::{Atomic, Relaxed},
    Arc,
};

#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use zoid_kernel::sysfs::{self, Attribute, SysfsDir, SysfsWriter};
use zoid_proto::version::SUITE_VERSION;

module! {
    type: Treenet,
    name: "treenet",
    authors: ["zoid developers"],
    description: "zoid tree network: reliable in-kernel message transport between CNs and IONs",
    license: "GPL",
}

/// The node's treenet state, shared with its sysfs files.
struct TreenetState {
    /// This node's id in its pset (set by the admin or the pset harness).
    node_id: Atomic<u32>,
}

fn show_node_id(s: &TreenetState, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", s.node_id.load(Relaxed))
}

fn store_node_id(s: &TreenetState, input: &[u8]) -> Result {
    let id = u32::try_from(sysfs::parse_u64(input)?).map_err(|_| ERANGE)?;
    s.node_id.store(id, Relaxed);
    Ok(())
}

static ATTRS: [Attribute<TreenetState>; 2] = [
    Attribute::ro(c"version", zoid_kernel::suite::show_version),
    Attribute::rw(c"node_id", show_node_id, store_node_id),
];

/// The loaded module.
struct Treenet {
    _sysfs: SysfsDir<TreenetState>,
}

impl kernel::Module for Treenet {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let state = Arc::new(
            TreenetState {
                node_id: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let sysfs = SysfsDir::new(c"treenet", state, &ATTRS)?;
        pr_info!("treenet {SUITE_VERSION} loaded\n");
        Ok(Self { _sysfs: sysfs })
    }
}

impl Drop for Treenet {
    fn drop(&mut self) {
        pr_info!("treenet unloaded\n");
    }
}

/// treenet's ABI version, exported to zoid and ssi (see `abi.rs`).
#[no_mangle]
pub extern "C" fn treenet_abi_version() -> u64 {
    SUITE_VERSION.to_wire()
}

/// The shared abstractions (`rust/zoid_kernel`) and protocol code
/// (`rust/zoid_proto`) run here in the kernel, on every arch we build
/// (ppc32 is big-endian): once, in the module at the bottom of the stack.
#[kunit_tests(zoid_kernel)]
mod zoid_kernel_tests {
    use super::zoid_kernel::sysfs::{parse_u64, SysfsWriter};
    use super::zoid_proto::{crc32c, version::Version};
    use core::fmt::Write;
    use kernel::prelude::*;

    #[test]
    fn sysfs_writer_formats_within_the_page() {
        let mut page = [0u8; 8];
        let mut w = SysfsWriter::new(&mut page);
        assert!(w.write_fmt(format_args!("{}\n", 1234)).is_ok());
        assert_eq!(w.as_bytes(), b"1234\n");
        // Three more bytes fit, four do not; a failed write leaves the page alone.
        assert!(w.write_str("abcd").is_err());
        assert!(w.write_str("abc").is_ok());
        assert_eq!(w.as_bytes(), b"1234\nabc");
        assert_eq!(w.write_fmt(format_args!("x")), Err(EOVERFLOW));
    }

    #[test]
    fn sysfs_knobs_parse_like_users_write_them() {
        assert_eq!(parse_u64(b"42\n"), Ok(42));
        assert_eq!(parse_u64(b"  0x10 "), Ok(16));
        assert_eq!(parse_u64(b"-1"), Err(EINVAL));
        assert_eq!(parse_u64(b""), Err(EINVAL));
        assert_eq!(parse_u64(b"\xff"), Err(EINVAL));
    }

    #[test]
    fn crc32c_matches_the_host_vectors() {
        assert_eq!(crc32c::checksum(b"123456789"), 0xe306_9283);
        let inc: [u8; 32] = core::array::from_fn(|i| i as u8);
        assert_eq!(crc32c::checksum(&inc), 0x46dd_794e);
        let mut c = crc32c::Crc32c::new();
        c.update(b"1234");
        c.update(b"56789");
        assert_eq!(c.finish(), 0xe306_9283);
    }

    #[test]
    fn version_wire_form_is_arch_independent() {
        let v = Version::new(1, 2, 3);
        assert_eq!(v.to_wire(), 0x0001_0002_0003);
        assert_eq!(Version::from_wire(0x0001_0002_0003), Some(v));
        assert_eq!(Version::from_wire(1 << 48), None);
    }
}

#[kunit_tests(treenet_sysfs)]
mod tests {
    use super::*;

    #[test]
    fn node_id_knob_accepts_u32_and_refuses_the_rest() {
        let s = TreenetState {
            node_id: Atomic::new(0),
        };
        assert_eq!(store_node_id(&s, b"7\n"), Ok(()));
        assert_eq!(s.node_id.load(Relaxed), 7);
        assert_eq!(store_node_id(&s, b"4294967296"), Err(ERANGE));
        assert_eq!(store_node_id(&s, b"seven"), Err(EINVAL));
        assert_eq!(s.node_id.load(Relaxed), 7);

        let mut page = [0u8; 16];
        let mut w = SysfsWriter::new(&mut page);
        assert_eq!(show_node_id(&s, &mut w), Ok(()));
        assert_eq!(w.as_bytes(), b"7\n");
    }
}
