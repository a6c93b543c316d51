# SPDX-License-Identifier: GPL-2.0
# zoid — in-kernel I/O forwarding from compute nodes to I/O nodes.
#
#   make run     build everything needed (kernel cached) and boot a pset:
#                1 ION + 2 CNs (x86_64, release kernel), suite loaded on all
#   make check   the whole test suite; ends with "N passed, N failed"
#
# Finer targets:
#   make setup                       install prerequisites (Debian packages, rust-src, bindgen)
#   make kernel  [ZOID_ARCH=..] [FLAVOR=..]   build/reuse a cached kernel, print its KDIR
#   make modules [ZOID_ARCH=..] [FLAVOR=..] [KDIR=..] [CLIPPY=1]
#                                    build the .ko files (into out/<arch>-<flavor>/)
#   make host-test                   cargo test of the no_std protocol crate
#   make soak                        minutes of mixed zoidfs load on a debug pset
#                                    (SOAK_SECONDS=600, SOAK_PROCS=4 per CN): throughput
#                                    per interval, no decay, no splat, no leak; then
#                                    SOAK_FLOOD_FRAMES=1000000 hostile frames from CN 1
#                                    in rounds of 89-treenet-hostile (0: no flood)
#   make sim                         discrete-event simulation of treenet, zoid and ssi at scale
#                                    (zoid_proto's real code, up to 256 CNs) and of
#                                    ssi containers on up to 4096 nodes: tables
#   make fmt                         rustfmt every Rust file
#   make bench-treenet               treenet vs TCP between 2 VMs (x86_64 release pset),
#                                    ends with RATIO lines (> 1: treenet better)
#   make bench-zoid                  zoid calls vs a user-space TCP forwarder (CIOD's
#                                    role), 2 VMs; RATIO lines (> 1: zoid better)
#   make bench-callpath              frames, interrupts and thread switches per round
#                                    trip (zoid null call, treenet ping, TCP), 2 VMs
#   make bench-profile               CPU profile of both VMs (tools/kprof) while treenet
#                                    and TCP stream and ping: where the time goes
#   make bench                       zoidfs vs NFSv4.2 vs v9fs in one 2-VM pset: table,
#                                    bench/results/*.json, RATIO lines (> 1: zoidfs better)
#   make bench-hooks                 ssi hook points off vs compiled out on a hot zoidfs
#                                    path (open/close), 2 VMs booted twice; RATIO lines
#   make conformance                 the POSIX suite (tools/zoid/posixcheck.c) on zoidfs,
#                                    NFS and v9fs of one ION and on a local tmpfs: each
#                                    system's deviations, CONFORMANCE and RATIO lines
#   make clean
#
# Building against your own kernel: `make modules KDIR=/path/to/prepared/7.x/tree`
# (CONFIG_RUST=y, same toolchain as that kernel; ZOID_ARCH=ppc32 for a ppc32 tree),
# and `qemu/pset --kdir /path/...` boots it.

ZOID_ARCH ?= x86_64
FLAVOR ?= debug
KDIR ?=

.PHONY: run check setup kernel modules host-test sim soak fmt clean bench bench-treenet bench-zoid bench-callpath bench-profile bench-knob bench-hooks conformance

run:
	@scripts/run.sh

check:
	@scripts/check.py

soak:
	@scripts/soak.sh

setup:
	@scripts/setup.sh

kernel: setup
	@scripts/build-kernel.sh $(ZOID_ARCH) $(FLAVOR)

modules:
	@scripts/build-modules.sh $(ZOID_ARCH) $(FLAVOR) $(KDIR)

bench:
	@scripts/bench-fs.sh

bench-treenet:
	@scripts/bench-treenet.sh

bench-zoid:
	@scripts/bench-zoid.sh

bench-callpath:
	@scripts/bench-callpath.sh

bench-profile:
	@scripts/bench-profile.sh

bench-knob:
	@scripts/bench-knob.sh

bench-hooks:
	@scripts/bench-hooks.sh

conformance:
	@scripts/conformance.sh

host-test:
	cargo test --locked --manifest-path rust/zoid_proto/Cargo.toml

sim:
	@scripts/sim.sh

fmt:
	cargo fmt --manifest-path rust/zoid_proto/Cargo.toml
	cargo fmt --manifest-path rust/zoid_sim/Cargo.toml
	rustfmt --edition 2021 --config-path $$(scripts/fetch-kernel.sh)/.rustfmt.toml \
		$$(git ls-files '*.rs' | grep -v '^rust/zoid_proto/' | grep -v '^rust/zoid_sim/')

clean:
	rm -rf out rust/zoid_proto/target rust/zoid_sim/target
