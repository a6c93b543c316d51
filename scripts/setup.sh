#!/usr/bin/env bash
# Install everything zoid needs to build and test, from registries only.
#
#  * Debian packages (toolchains, QEMU, busybox, u-boot-tools, ...)
#  * rustup's rust-src component and bindgen-cli from crates.io
#
# Idempotent: a second run installs nothing and takes a second.
# Needs root (or sudo).  Kernel sources are fetched separately by
# scripts/fetch-kernel.sh, without touching the system's apt sources.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PKGS=(
  # kernel build
  make flex bison bc cpio xz-utils libelf-dev libssl-dev python3 kmod rsync
  # Rust-for-Linux toolchain (LLVM=1 for x86_64)
  clang-19 lld-19 llvm-19 libclang-19-dev
  # ppc32 (PPC440): GCC for C, u-boot-tools for uImage
  gcc-powerpc-linux-gnu libc6-dev-powerpc-cross u-boot-tools
  # guests
  qemu-system-x86 qemu-system-ppc busybox-static
  # the ION's ext4 disk in the crash test (qemu/pset --ion-disk)
  e2fsprogs
  # busybox cross-build for ppc32 (apt-get source)
  dpkg-dev
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # One retry: on a fresh machine dpkg has been seen to fail once while
  # configuring a large batch, and to succeed when resumed.
  if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "setup: apt-get failed once; resuming dpkg and retrying" >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive dpkg --configure -a || true
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
  echo "setup: rustup component add rust-src"
  rustup component add rust-src
fi

if ! command -v bindgen >/dev/null 2>&1; then
  echo "setup: cargo install --locked bindgen-cli"
  LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked bindgen-cli
fi
echo "setup: all prerequisites present"
