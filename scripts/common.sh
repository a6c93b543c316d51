# Sourced by zoid's scripts: what they all share.

# Where kernels, sources, busybox and apt state are cached (outside the repo).
ZOID_CACHE=${ZOID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zoid}

# Prints "<name> <folder>" for each zoid module, in load order
# (scripts/modules.list without comments and blank lines).
zoid_modules() {
  sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$(dirname "${BASH_SOURCE[0]}")/modules.list"
}
