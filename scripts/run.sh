#!/usr/bin/env bash
# `make run`: from a fresh machine to a booted pset (1 ION + 2 CNs, x86_64,
# release kernel) with the zoid suite loaded on every node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup.sh"
cat <<'EOT'
run: booting a pset: 1 ION + 2 CNs (x86_64, release kernel; the first run
run: builds the kernel, 15-20 min on 2 cores; later runs reuse it from ~/.cache/zoid)
EOT
show='echo "node $ZOID_NODE ($ZOID_ROLE, id $(cat /sys/kernel/treenet/node_id)): $(uname -r) $(uname -m)"
for m in $(cat /lib/zoid/load-order); do echo "  $m $(cat /sys/kernel/$m/version)"; done
echo "  tree links: $(ls /sys/class/net | grep -v "^lo$" | tr "\n" " ")"'
exec "$here/../qemu/pset" --arch x86_64 --flavor release --cns 2 \
  --ion-cmd "$show" --cn-cmd "$show" --timeout 900 "$@"
