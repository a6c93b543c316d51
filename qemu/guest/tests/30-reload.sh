# The suite unloads cleanly (sysfs directories gone) and loads again.
order=$(cat /lib/zoid/load-order)
reverse=$(echo "$order" | sed '1!G;h;$!d')
# zoidfs's write verifier belongs to the boot, not to the module: a reload
# must not make CNs resend (or, with cache=none, fail) their fsyncs.
verf=$(cat /sys/kernel/zoid/zoidfs_verifier)
# zoid and ssi pin treenet: it cannot go first.
if rmmod treenet 2>/dev/null; then echo "treenet unloaded under its users"; exit 1; fi
for m in $reverse; do rmmod "$m"; done
for m in $order; do
  [ ! -e /sys/kernel/$m ] || { echo "/sys/kernel/$m left behind"; exit 1; }
done
# The test plug-in is off unless asked for (test_plugins=1, as load_suite
# and the pset's init do).
insmod /lib/zoid/treenet.ko && insmod /lib/zoid/zoid.ko
grep -q "^ztest 1 off$" /sys/kernel/zoid/modules ||
  { echo "ztest on by default: $(grep ztest /sys/kernel/zoid/modules)"; exit 1; }
rmmod zoid && rmmod treenet
# treenet comes back through its module parameters this time.
devs=$(ls /sys/class/net | grep -v '^lo$' | tr '\n' ',' | sed 's/,$//')
. /zoid/tests/treenet-lib.sh
load_suite
[ "$(cat /sys/kernel/treenet/node_id)" = "$ZOID_NODE_ID" ]
[ "$(cat /sys/kernel/treenet/role)" = "$ZOID_ROLE" ]
[ "$(grep -c mtu= /sys/kernel/treenet/links)" = "$(echo "$devs" | tr ',' '\n' | grep -c .)" ]
for m in $order; do [ -r /sys/kernel/$m/version ]; done
[ "$(cat /sys/kernel/zoid/zoidfs_verifier)" = "$verf" ] ||
  { echo "the write verifier changed with a reload: $verf, now $(cat /sys/kernel/zoid/zoidfs_verifier)"; exit 1; }
