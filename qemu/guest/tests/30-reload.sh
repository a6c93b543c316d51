# The suite unloads cleanly (sysfs directories gone) and loads again.
order=$(cat /lib/zoid/load-order)
reverse=$(echo "$order" | sed '1!G;h;$!d')
# zoid and ssi pin treenet: it cannot go first.
if rmmod treenet 2>/dev/null; then echo "treenet unloaded under its users"; exit 1; fi
for m in $reverse; do rmmod "$m"; done
for m in $order; do
  [ ! -e /sys/kernel/$m ] || { echo "/sys/kernel/$m left behind"; exit 1; }
done
for m in $order; do insmod /lib/zoid/$m.ko; done
echo "$ZOID_NODE_ID" > /sys/kernel/treenet/node_id
for m in $order; do [ -r /sys/kernel/$m/version ]; done
