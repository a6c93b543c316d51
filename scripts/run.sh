#!/usr/bin/env bash
# `make run`: from a fresh machine to a booted pset (1 ION + 2 CNs, x86_64,
# release kernel) with the zoid suite loaded on every node; every CN mounts
# the ION's export with zoidfs, and the ION launches a short workload on
# the CNs with zoid-job run.
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
# The demo: the ION exports /export; every CN mounts it with zoidfs; the
# ION launches the workload on the CNs (zoid-job run: each rank writes a
# file through zoidfs, reads it back and lists what all CNs wrote, its
# output coming back tagged with its rank), then lists /export and the
# job counters.  The nodes meet at treenet barriers (every node waits for
# every other).
meet='meet() { echo "barrier $1 $ZOID_CNS" > /sys/kernel/treenet/selftest; }'
workload='grep -q " /mnt/zoidfs zoidfs " /proc/mounts || { echo "no zoidfs at /mnt/zoidfs"; exit 1; }
dd if=/dev/urandom of=/tmp/data bs=64k count=16 2>/dev/null
cp /tmp/data /mnt/zoidfs/rank$ZOID_JOB_RANK.data
cmp /tmp/data /mnt/zoidfs/rank$ZOID_JOB_RANK.data && echo "rank $ZOID_JOB_RANK of $ZOID_JOB_GLOBAL_SIZE on CN $(cat /sys/kernel/treenet/node_id): wrote and read back 1 MiB through zoidfs"
echo "zoidfs counters: $(awk "\$2 != 0" /sys/kernel/zoidfs/stats | tr "\n" " ")"'
printf '%s\n' "$workload" > "$here/../out/run-workload.sh"
ion_demo="$show
$meet
mkdir -p /export && chmod 1777 /export && echo /export > /sys/kernel/zoid/export
echo \"  exporting /export to the CNs\"
meet 1; meet 2
echo \"  launching the workload on every CN: zoid-job run -- sh /zoid/run-workload.sh\"
/zoid/bin/zoid-job run -v -- sh /zoid/run-workload.sh 2>&1 | sed \"s/^/  /\"
echo \"  /export on the ION now holds: \$(ls /export | tr \"\\n\" \" \")\"
echo \"  job counters: \$(awk \"\\\$2 != 0\" /sys/kernel/zoid/launch_stats | tr \"\\n\" \" \")\"
meet 3; meet 4"
cn_demo="$show
$meet
meet 1
mkdir -p /mnt/zoidfs && mount -t zoidfs zoidfs /mnt/zoidfs
grep \" /mnt/zoidfs \" /proc/mounts | sed \"s/^/  mounted: /\"
meet 2
meet 3
umount /mnt/zoidfs
meet 4"
zoid_job=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoid-job.c | tail -1)
runner=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoid-job-run.c | tail -1)
exec "$here/../qemu/pset" --arch x86_64 --flavor release --cns 2 \
  --add "$zoid_job:/zoid/bin/zoid-job" --add "$runner:/sbin/zoid-job-run" \
  --add "$here/../out/run-workload.sh:/zoid/run-workload.sh" \
  --ion-cmd "$ion_demo" --cn-cmd "$cn_demo" --timeout 900 "$@"
