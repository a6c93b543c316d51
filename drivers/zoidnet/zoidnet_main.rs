// SPDX-License-Identifier: GPL-2.0

//! zoidnet: IP over treenet.
//!
//! Every node of a pset gets a network device, `zn0` (module parameter
//! `ifname`), whose IPv4 and IPv6 packets travel as treenet messages on
//! channel [`CHANNEL`] between a CN and its ION; the ION is its CNs'
//! router (its kernel forwards, and masquerades when its administrator
//! asks nftables to).  Where packets go and which ones a node lets in is
//! `zoid_proto::zoidnet` (the address plan and the trust checks); this
//! module moves them (`device.rs`).  `docs/zoidnet.md` describes it.
//!
//! `/sys/kernel/zoidnet/`:
//!
//! * `ifname`: the device's name now.
//! * `address`, `address6`: this node's IPv4 address and IPv6 address,
//!   with their prefix length (empty while treenet has no node id, or
//!   the plan has no room for it).
//! * `gateway`, `gateway6`: the ION's addresses, on a CN (the last ION it
//!   had); empty on the ION.
//! * `subnet`, `subnet6`: the plan, `ADDRESS/LEN`; writable while the
//!   device is down (`EBUSY` while up, `EINVAL` for a bad value), and the
//!   same on every node of the pset.
//! * `stats`: counters.
//! * `version`: the suite version.
//!
//! `tools/zoidnet/zoidnet-up` gives the device its addresses and routes
//! from these files.

use kernel::prelude::*;

mod device;

#[path = "../treenet/abi.rs"]
mod treenet;
#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use device::{Zoidnet, CHANNEL};
use zoid_kernel::kthread::KThread;
use zoid_kernel::netdev::{MAX_MTU, MIN_MTU};
use zoid_kernel::params::string_param;
use zoid_kernel::sysfs::{Attribute, SysfsDir, SysfsWriter};
use zoid_proto::version::SUITE_VERSION;
use zoid_proto::zoidnet::{Subnet4, Subnet6};

module! {
    type: ZoidnetModule,
    name: "zoidnet",
    authors: ["zoid developers"],
    description: "zoidnet: IP over treenet (the zn0 device)",
    license: "GPL",
    params: {
        mtu: u32 {
            default: 65000,
            description: "MTU of the device (1280..65535; default 65000)",
        },
    },
}

/// `address`: this node's IPv4 address and prefix length.
fn show_address(z: &Zoidnet, w: &mut SysfsWriter<'_>) -> Result {
    let plan = z.plan();
    match z.refresh_topology().and_then(|l| plan.address4(l.node)) {
        Some(a) => writeln!(w, "{a}/{}", plan.v4.prefix_len()),
        None => writeln!(w),
    }
}

/// `address6`: this node's IPv6 address and prefix length.
fn show_address6(z: &Zoidnet, w: &mut SysfsWriter<'_>) -> Result {
    let plan = z.plan();
    match z.refresh_topology().and_then(|l| plan.address6(l.node)) {
        Some(a) => writeln!(w, "{a}/{}", plan.v6.prefix_len()),
        None => writeln!(w),
    }
}

/// `gateway`: the ION's IPv4 address, on a CN.
fn show_gateway(z: &Zoidnet, w: &mut SysfsWriter<'_>) -> Result {
    z.refresh_topology();
    match z.gateway().and_then(|ion| z.plan().address4(ion)) {
        Some(a) => writeln!(w, "{a}"),
        None => writeln!(w),
    }
}

/// `gateway6`: the ION's IPv6 address, on a CN.
fn show_gateway6(z: &Zoidnet, w: &mut SysfsWriter<'_>) -> Result {
    z.refresh_topology();
    match z.gateway().and_then(|ion| z.plan().address6(ion)) {
        Some(a) => writeln!(w, "{a}"),
        None => writeln!(w),
    }
}

/// `subnet`: a new IPv4 subnet, while the device is down.
fn store_subnet(z: &Zoidnet, input: &[u8]) -> Result {
    let subnet = Subnet4::parse(input).ok_or(EINVAL)?;
    z.change_plan(|p| p.v4 = subnet)
}

/// `subnet6`: a new IPv6 prefix, while the device is down.
fn store_subnet6(z: &Zoidnet, input: &[u8]) -> Result {
    let subnet = Subnet6::parse(input).ok_or(EINVAL)?;
    z.change_plan(|p| p.v6 = subnet)
}

/// `ifname`: the device's name now.
fn show_ifname(z: &Zoidnet, w: &mut SysfsWriter<'_>) -> Result {
    w.write_bytes(z.dev.name().as_bytes())?;
    writeln!(w)
}

static ATTRS: [Attribute<Zoidnet>; 9] = [
    Attribute::ro(c"version", zoid_kernel::suite::show_version),
    Attribute::ro(c"ifname", show_ifname),
    Attribute::ro(c"address", show_address),
    Attribute::ro(c"address6", show_address6),
    Attribute::ro(c"gateway", show_gateway),
    Attribute::ro(c"gateway6", show_gateway6),
    Attribute::rw(
        c"subnet",
        |z, w| writeln!(w, "{}", z.plan().v4),
        store_subnet,
    ),
    Attribute::rw(
        c"subnet6",
        |z, w| writeln!(w, "{}", z.plan().v6),
        store_subnet6,
    ),
    Attribute::ro(c"stats", |z, w| z.show_stats(w)),
];

/// The loaded module.  Fields drop in order: no sysfs access, then no
/// treenet callback, then no transmit thread; the device goes with the
/// last reference to the state (unregistered, its queue dropped).
struct ZoidnetModule {
    _sysfs: SysfsDir<Zoidnet>,
    _channel: treenet::Channel<Zoidnet>,
    _tx: KThread<Zoidnet>,
}

/// The `mtu` parameter, checked.
fn mtu_param() -> Result<u32> {
    let mtu = module_parameters::mtu.value();
    if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
        pr_err!("mtu={mtu}: the MTU must be {MIN_MTU}..{MAX_MTU}\n");
        return Err(EINVAL);
    }
    Ok(mtu)
}

impl kernel::Module for ZoidnetModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let treenet = treenet::attach()?;
        let mtu = mtu_param()?;
        let ifname = string_param!(zk_param_ifname);
        let zoidnet = Zoidnet::new(ifname, mtu).inspect_err(|e| {
            pr_err!("cannot register the device: error {}\n", e.to_errno());
        })?;
        let tx = KThread::spawn(c"zoidnet_tx", zoidnet.clone())?;
        let channel = treenet::Channel::register(CHANNEL, zoidnet.clone())?;
        zoidnet.refresh_topology();
        let sysfs = SysfsDir::new(c"zoidnet", zoidnet.clone(), &ATTRS)?;
        let name = zoidnet.dev.name();
        let name = core::str::from_utf8(name.as_bytes()).unwrap_or("?");
        pr_info!("zoidnet {SUITE_VERSION} loaded (treenet {treenet}): {name}, MTU {mtu}\n");
        Ok(Self {
            _sysfs: sysfs,
            _channel: channel,
            _tx: tx,
        })
    }
}

impl Drop for ZoidnetModule {
    fn drop(&mut self) {
        pr_info!("zoidnet unloading\n");
    }
}

#[kunit_tests(zoidnet)]
mod tests {
    use super::zoid_kernel::netdev::{Config, NetDev, NetDevOps, Stats64};
    use super::zoid_proto::version::Version;
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::sync::Arc;

    /// zoidnet refuses a treenet it cannot talk to.
    #[test]
    fn incompatible_treenet_is_refused() {
        let next_major = Version::new(SUITE_VERSION.major + 1, 0, 0);
        assert_eq!(treenet::check_compatible(next_major.to_wire()), Err(EPROTO));
        assert_eq!(
            treenet::check_compatible(SUITE_VERSION.to_wire()),
            Ok(SUITE_VERSION)
        );
    }

    struct Owner {
        kicks: Atomic<u32>,
    }

    impl NetDevOps for Owner {
        fn kick(&self) {
            self.kicks.fetch_add(1, Relaxed);
        }

        fn stats(&self) -> Stats64 {
            Stats64::default()
        }
    }

    /// A device registers down, without carrier and with nothing queued,
    /// refuses packets while down and goes away when dropped.
    #[test]
    fn a_device_registers_and_goes() -> Result {
        let owner = Arc::new(
            Owner {
                kicks: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let config = Config {
            mtu: 9000,
            tx_queue_limit: 4,
        };
        let dev = NetDev::register(c"zntest%d", config, owner)?;
        assert!(dev.name().as_bytes().starts_with(b"zntest"));
        assert!(!dev.is_up());
        assert_eq!(dev.queued(), 0);
        assert!(dev.dequeue().is_none());
        dev.set_carrier(true);
        dev.set_carrier(false);
        dev.wake_queue();
        let packet = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        assert_eq!(dev.receive(&packet), Err(ENETDOWN));
        assert_eq!(dev.receive(&[0x50]), Err(EINVAL));
        assert_eq!(dev.receive(&[]), Err(EINVAL));
        assert_eq!(dev.ops().kicks.load(Relaxed), 0);
        let bad = Config {
            mtu: 100,
            tx_queue_limit: 4,
        };
        let owner = Arc::new(
            Owner {
                kicks: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        assert!(NetDev::register(c"zntest%d", bad, owner).is_err());
        Ok(())
    }
}
