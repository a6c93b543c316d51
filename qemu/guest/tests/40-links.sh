# The pset wiring: a CN has one link (to its ION), the ION one per CN, all up.
links=$(ls /sys/class/net | grep -v '^lo$' | wc -l)
if [ "$ZOID_ROLE" = ion ]; then want=$ZOID_CNS; else want=1; fi
[ "$links" = "$want" ] || { echo "$links links, want $want"; exit 1; }
for l in $(ls /sys/class/net | grep -v '^lo$'); do
  grep -q 1 /sys/class/net/$l/carrier || { echo "$l has no carrier"; exit 1; }
done
