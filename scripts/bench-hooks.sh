#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-hooks`: what ssi's hook points cost on a hot zoidfs path when
# they are off, against the same modules built without them (ZOID_HOOKS=n),
# side by side in the same 1 ION + 1 CN x86_64 release pset
# (qemu/guest/bench/hooks.sh).  Boots the pset twice (hooks in: phases off
# and on; hooks out) and prints the table and RATIO lines (per-iteration
# time of hooks out / hooks in: 1.0 means free), results in
# bench/results/hooks-<date>.json.  Knobs: REPEAT (5), BENCH_OPS (20000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-hooks"
fsbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/fsbench.c)
env="REPEAT=${REPEAT:-5} BENCH_OPS=${BENCH_OPS:-20000}"
rm -rf "$log"
rc=0
boot() { # name ZOID_HOOKS phases
  ZOID_HOOKS=$2 "$repo/qemu/pset" --arch x86_64 --flavor release --cns 1 --log "$log/$1" \
    --add "$fsbench:/zoid/bench/fsbench" \
    --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
    --add "$repo/qemu/guest/bench/hooks.sh:/zoid/bench/hooks.sh" \
    --ion-cmd "$env sh /zoid/bench/hooks.sh" \
    --cn-cmd "$env BENCH_PHASES='$3' sh /zoid/bench/hooks.sh" \
    --timeout "${BENCH_TIMEOUT:-1800}" || rc=$?
}
boot in "" "off on"
boot out n "out"
mkdir -p "$repo/bench/results"
results="$repo/bench/results/hooks-$(date -u +%Y%m%d-%H%M).json"
python3 - "$log" "$results" <<'PY' || rc=1
import json, re, sys
log, out = sys.argv[1], sys.argv[2]
vals = {}
for run in ("in", "out"):
    try:
        text = open(f"{log}/{run}/cn1.console", errors="replace").read()
    except OSError:
        continue
    for m in re.finditer(r"BENCH (openclose_\w+_ns) ([0-9.]+)", text):
        vals[m.group(1)] = float(m.group(2))
print(f"{'phase':<28}{'ns per open+close':>20}")
for k in ("openclose_out_ns", "openclose_off_ns", "openclose_on_ns"):
    print(f"{k:<28}{vals.get(k, float('nan')):>20.1f}")
ratios = {}
base = vals.get("openclose_out_ns")
for k in ("off", "on"):
    v = vals.get(f"openclose_{k}_ns")
    if base and v:
        ratios[f"hooks_{k}_vs_out"] = round(base / v, 3)
for k, r in ratios.items():
    print(f"RATIO {k} {r}  (> 1: faster than compiled out)")
json.dump({"values_ns": vals, "ratios": ratios}, open(out, "w"), indent=1)
print(f"bench: results in {out}")
sys.exit(0 if len(ratios) == 2 else 1)
PY
exit "$rc"
