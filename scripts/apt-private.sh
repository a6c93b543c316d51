# Sourced by scripts: a private apt configuration that can fetch packages
# and sources from Debian suites the system does not list, without touching
# the system's apt sources.  Usage: apt_private <apt-get args...>
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
APT_PRIVATE_DIR="$ZOID_CACHE/apt"

apt_private_init() {
  mkdir -p "$APT_PRIVATE_DIR"/{lists/partial,cache/archives/partial,etc/sources.list.d,etc/preferences.d}
  local key=/usr/share/keyrings/debian-archive-keyring.gpg
  cat > "$APT_PRIVATE_DIR/etc/sources.list" <<EOS
deb [signed-by=$key] http://deb.debian.org/debian trixie-backports main
deb-src [signed-by=$key] http://deb.debian.org/debian bookworm main
EOS
  # Refresh the lists at most once a day.
  if [ -z "$(find "$APT_PRIVATE_DIR/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
    apt_private update -qq
  fi
}

apt_private() {
  apt-get \
    -o Dir::Etc::sourcelist="$APT_PRIVATE_DIR/etc/sources.list" \
    -o Dir::Etc::sourceparts="$APT_PRIVATE_DIR/etc/sources.list.d" \
    -o Dir::Etc::preferencesparts="$APT_PRIVATE_DIR/etc/preferences.d" \
    -o Dir::State::Lists="$APT_PRIVATE_DIR/lists" \
    -o Dir::Cache="$APT_PRIVATE_DIR/cache" \
    -o APT::Sandbox::User=root \
    "$@"
}

apt_private_cache() {
  apt-cache \
    -o Dir::Etc::sourcelist="$APT_PRIVATE_DIR/etc/sources.list" \
    -o Dir::Etc::sourceparts="$APT_PRIVATE_DIR/etc/sources.list.d" \
    -o Dir::State::Lists="$APT_PRIVATE_DIR/lists" \
    -o Dir::Cache="$APT_PRIVATE_DIR/cache" \
    "$@"
}
