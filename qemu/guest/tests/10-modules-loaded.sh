# Every suite module is loaded and shows the suite version in sysfs.
want=$(cat /zoid/suite-version)
for m in $(cat /lib/zoid/load-order); do
  grep -q "^$m " /proc/modules || { echo "$m is not loaded"; exit 1; }
  got=$(cat /sys/kernel/$m/version)
  [ "$got" = "$want" ] || { echo "$m: version '$got', want '$want'"; exit 1; }
done
# zoid reports the treenet it attached to.
[ "$(cat /sys/kernel/zoid/treenet_version)" = "$want" ]
