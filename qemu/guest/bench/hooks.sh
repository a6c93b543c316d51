#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench-hooks`, the in-guest half (scripts/bench-hooks.sh boots a
# 1 ION + 1 CN pset with it twice: modules with the hook points compiled in,
# then with ZOID_HOOKS=n).  The CN opens and closes one file of a
# cache=loose zoidfs mount OPS times in a row: a hot path that stays on the
# CN (no call to the ION) and passes two hook points per iteration
# (zoidfs_open, zoidfs_close).  For each phase of BENCH_PHASES it prints
#   BENCH openclose_<phase>_ns   nanoseconds per open+close (total / OPS),
#                                median of REPEAT runs
# with phases: off (hooks compiled in, all off: the default), on (+all, ssi
# counting every event), out (a ZOID_HOOKS=n build: nothing to turn).
FSB=${FSBENCH:-/zoid/bench/fsbench}
OPS=${BENCH_OPS:-20000}
PHASES=${BENCH_PHASES:-off on}
S=/sys/kernel/ssi
M=/mnt/bench-hooks
. "$(dirname "$0")/lib.sh"
[ -x "$FSB" ] || die "no fsbench at $FSB"

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p /export && echo data > /export/f && echo /export > $Z/export || die "no export"
fi
barrier 1
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M && mount -t zoidfs -o cache=loose zoidfs $M || die "cannot mount zoidfs"
  "$FSB" openclose $M/f 1000 > /dev/null || die "warm-up failed"
  for phase in $PHASES; do
    case $phase in
      on) echo +all > $S/hooks ;;
      off) echo -all > $S/hooks ;;
    esac
    runs= i=0
    while [ "$i" -lt "$REPEAT" ]; do
      out=$("$FSB" openclose $M/f "$OPS" 2>&1)
      ns=$(field ns "$out")
      [ -n "$ns" ] || { fail "openclose_${phase}_ns" "$out"; break; }
      runs="$runs $(awk -v ns="$ns" -v n="$OPS" 'BEGIN { printf "%.1f", ns / n }')"
      i=$((i + 1))
    done
    [ "$i" = "$REPEAT" ] && report "openclose_${phase}_ns" $runs
  done
  say "hooks: $(tr '\n' ' ' < $S/hooks)"
  umount $M
fi
barrier 2
exit "$failed"
