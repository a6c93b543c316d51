# Allocation failures (the debug kernel's fault injection: failslab and
# fail_page_alloc, x86_64): while a share of the allocations made on the
# suite's behalf fail (those whose call stack passes through one of its
# modules: the stack-trace filter), first on the CNs, then on the ION,
# every CN writes records with an fsync each, makes and renames
# directories and calls the ION.  What fails must fail with an error to
# its caller, never a splat or a hang; every record whose fsync succeeded
# must be on the ION afterwards, whole; and once injection stops, every
# node works as before.  (Leaks: this test is in the kmemleak pset too.)
# Skipped where the kernel has no fault injection (ppc32).
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
F=/sys/kernel/debug
X=/zfs-faults-export
M=/mnt/zfs-faults
PERCENT=20
SECONDS_EACH=30
[ -d $F/failslab ] || exit 0
fail() { echo "$*"; nonzero "zoid stats" $Z/stats; nonzero "zoidfs stats" /sys/kernel/zoidfs/stats; dmesg | tail -5; injection off; exit 1; }
# Our modules' code, from the lowest to the highest address: an allocation
# fails only if its stack trace passes through it.
range() {
  lo=; hi=
  while read -r name size _ _ _ addr _; do
    case $name in treenet|zoid|zoidfs|ssi|zoid_sample) ;; *) continue ;; esac
    a=$((addr)); e=$((addr + size))
    if [ -z "$lo" ] || [ $a -lt $lo ]; then lo=$a; fi
    if [ -z "$hi" ] || [ $e -gt $hi ]; then hi=$e; fi
  done < /proc/modules
  printf '0x%x 0x%x\n' $lo $hi
}
# injection on|off: a share of our allocations fail (on: `times` counts
# down from TIMES, so TIMES minus it is how many failed).
TIMES=1000000
injection() {
  r=$(range)
  for a in failslab fail_page_alloc; do
    if [ "$1" = on ]; then
      echo 0 > $F/$a/verbose
      echo N > $F/$a/task-filter
      echo $TIMES > $F/$a/times
      echo 1 > $F/$a/interval
      echo ${r% *} > $F/$a/require-start
      echo ${r#* } > $F/$a/require-end
      echo $PERCENT > $F/$a/probability
    else
      echo 0 > $F/$a/probability
    fi
  done
}
injected() { echo $(( 2 * TIMES - $(cat $F/failslab/times) - $(cat $F/fail_page_alloc/times) )); }
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
fi
barrier 1140
# One round of the workload for SECONDS_EACH: records with an fsync each
# (acknowledged ones noted), directories made and renamed, calls.
workload() {
  end=$(( $(cut -d. -f1 /proc/uptime) + SECONDS_EACH ))
  i=0; ok=0; bad=0
  while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    i=$((i + 1))
    f=$M/$1-$ZOID_NODE-$i
    printf '%s record %d of %s\n' "$1" $i "$ZOID_NODE" > /tmp/faults-rec
    if dd if=/tmp/faults-rec of=$f conv=fsync 2>/dev/null; then
      echo "$f" >> /tmp/faults-acked; ok=$((ok + 1))
    else
      bad=$((bad + 1))
    fi
    mkdir $M/$1-d-$ZOID_NODE-$i 2>/dev/null && mv $M/$1-d-$ZOID_NODE-$i $M/$1-e-$ZOID_NODE-$i 2>/dev/null
    $ZC echo 4096 1 > /dev/null 2>&1 || bad=$((bad + 1))
  done
  echo "$ZOID_NODE, $1: $ok records acknowledged, $bad operations failed"
}
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M && mount -t zoidfs -o cache=strict,soft,timeo=50 zoidfs $M || fail "mount"
  rm -f /tmp/faults-acked
fi
# The nodes of one side inject between barriers (a barrier is the
# suite's code too: it could fail), for as long as the CNs' workload
# runs.
for side in cn ion; do
  barrier $([ $side = cn ] && echo 1141 || echo 1142)
  [ "$ZOID_ROLE" = $side ] && injection on
  if [ "$ZOID_ROLE" = cn ]; then
    workload $side-faults
  else
    sleep $SECONDS_EACH
  fi
  if [ "$ZOID_ROLE" = $side ]; then
    injection off
    n=$(injected)
    echo "$ZOID_NODE: $n allocations failed on purpose"
    [ "$n" -gt 0 ] || fail "no allocation failed: the injection missed the suite's code"
  fi
done
barrier 1144
# Injection is over: every acknowledged record is on the ION, whole, and
# the nodes work as before.
if [ "$ZOID_ROLE" = cn ]; then
  workload after
  cp /tmp/faults-acked $M/acked-$ZOID_NODE || fail "the acknowledged list"
  umount $M || fail "umount"
fi
barrier 1145
if [ "$ZOID_ROLE" = ion ]; then
  for cn in $(seq 1 "$ZOID_CNS"); do
    n=0
    while read -r f; do
      name=$(basename "$f")
      [ -f "$X/$name" ] || fail "acknowledged $name is missing on the ION"
      i=${name##*-}
      want="$(echo "$name" | sed 's/-cn[0-9]*-[0-9]*$//') record $i of cn$cn"
      [ "$(cat "$X/$name")" = "$want" ] || fail "$name holds '$(cat "$X/$name")', want '$want'"
      n=$((n + 1))
    done < $X/acked-cn$cn
    echo "cn$cn: $n acknowledged records all on the ION"
  done
  echo > $Z/export
  rm -rf $X
fi
barrier 1146
