# Sourced: the toolchain each zoid architecture is built with.  Modules are
# always built with the same toolchain as their kernel.
#   x86_64: LLVM=1 (clang/lld 19) for C, rustc for Rust
#   ppc32:  GCC (powerpc-linux-gnu-) for C, rustc for Rust
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ZOID_KMAKE_ARGS=()

toolchain_env() {
  export PATH="/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH"
  export LIBCLANG_PATH=/usr/lib/llvm-19/lib
  case "$1" in
    x86_64) ZOID_KMAKE_ARGS=(ARCH=x86_64 LLVM=1) ;;
    ppc32) ZOID_KMAKE_ARGS=(ARCH=powerpc CROSS_COMPILE=powerpc-linux-gnu-) ;;
    *) echo "toolchain: unknown arch $1" >&2; return 1 ;;
  esac
}

toolchain_versions() {
  rustc --version; bindgen --version 2>/dev/null | head -n1
  case "$1" in
    x86_64) clang --version | head -n1 ;;
    ppc32) powerpc-linux-gnu-gcc --version | head -n1 ;;
  esac
}

kmake() { make "${ZOID_KMAKE_ARGS[@]}" "$@"; }
