#!/usr/bin/env bash
# `make run`: from a fresh machine to a booted pset (1 ION + 2 CNs, x86_64,
# release kernel) with the zoid suite loaded on every node; every CN mounts
# the ION's export with zoidfs and runs a short workload.
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
# The demo: the ION exports /export; every CN mounts it with zoidfs, writes
# a file, reads it back, lists what all CNs wrote and prints its counters.
# The nodes meet at treenet barriers (every node waits for every other).
meet='meet() { echo "barrier $1 $ZOID_CNS" > /sys/kernel/treenet/selftest; }'
ion_demo="$show
$meet
mkdir -p /export && chmod 1777 /export && echo /export > /sys/kernel/zoid/export
echo \"  exporting /export to the CNs\"
meet 1; meet 2; meet 3
echo \"  /export on the ION now holds: \$(ls /export | tr \"\\n\" \" \")\""
cn_demo="$show
$meet
meet 1
mkdir -p /mnt/zoidfs && mount -t zoidfs zoidfs /mnt/zoidfs
grep \" /mnt/zoidfs \" /proc/mounts | sed \"s/^/  mounted: /\"
dd if=/dev/urandom of=/tmp/data bs=64k count=16 2>/dev/null
cp /tmp/data /mnt/zoidfs/cn\$ZOID_NODE_ID.data
cmp /tmp/data /mnt/zoidfs/cn\$ZOID_NODE_ID.data && echo \"  wrote and read back 1 MiB through zoidfs\"
meet 2
echo \"  every CN's files: \$(ls /mnt/zoidfs | tr \"\\n\" \" \")\"
echo \"  zoidfs counters: \$(awk \"\\\$2 != 0\" /sys/kernel/zoidfs/stats | tr \"\\n\" \" \")\"
umount /mnt/zoidfs
meet 3"
exec "$here/../qemu/pset" --arch x86_64 --flavor release --cns 2 \
  --ion-cmd "$ion_demo" --cn-cmd "$cn_demo" --timeout 900 "$@"
