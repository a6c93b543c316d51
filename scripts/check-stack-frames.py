#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stack frame budget of the ppc32 modules (`make check` runs it).

    scripts/check-stack-frames.py OUTDIR [--limit BYTES] [--top N]

The 440's kernel stacks are 8 KiB (THREAD_SHIFT 13) with no guard page: a
thread that runs off its stack silently corrupts the memory below it (a
treenet engine thread did, before its 3.8 KiB `handle_frame` frame was
split up: docs/reliability.md).  C code has -Wframe-larger-than (FRAME_WARN);
rustc has nothing like it, so this reads each function's prologue
(`stwu r1,-N(r1)`) in the built .ko files and fails when a frame exceeds the
limit, except the few allowed below.  A frame of variable size (`stwux`,
an alloca) fails too.  The runtime side is the ppc32 debug kernel's
DEBUG_STACK_USAGE, checked by the pset harness.
"""

import argparse
import os
import re
import subprocess
import sys

MODULES = ["drivers/treenet/treenet.ko", "drivers/zoidnet/zoidnet.ko", "drivers/zoid/zoid.ko",
           "fs/zoidfs/zoidfs.ko", "ssi/ssi.ko"]
DEFAULT_LIMIT = 1024
# (pattern on the mangled name, largest frame allowed, why).
ALLOWED = [
    (r"engine.*Inner12new_neighbor$", 1280,
     "once per neighbour handshake, never inlined; calls only allocators"),
]

# A frame is made by `stwu rS,-N(r1)` (store and update r1), once, or for a
# frame over 4 KiB several times in a row (rustc's inline stack probes:
# `stwu r0,-1376(r1)`, `stwu r0,-4096(r1)`), or by `stwux r1,r1,rX` (a size
# in a register: a dynamic or very large frame).
STWU = re.compile(r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{2} ){4}\s*stwu\s+r\d+,-(\d+)\(r1\)")
STWUX = re.compile(r"^\s*[0-9a-f]+:\s+(?:[0-9a-f]{2} ){4}\s*stwux\s+r\d+,r1,")
HEADER = re.compile(r"^[0-9a-f]+ <(.+)>:$")
# Instructions of a prologue searched for the frame's making.
PROLOGUE_LINES = 24


def frames(ko, objdump):
    """(function, frame bytes or None for a variable frame) of every function."""
    out = subprocess.run([objdump, "-d", ko], capture_output=True, text=True,
                         check=True).stdout
    fn, lines, size, dynamic = None, 0, 0, False

    def done():
        return (fn, None if dynamic else size)

    for line in out.splitlines():
        m = HEADER.match(line)
        if m:
            if fn is not None:
                yield done()
            fn, lines, size, dynamic = m.group(1), 0, 0, False
            continue
        if fn is None:
            continue
        lines += 1
        if lines > PROLOGUE_LINES:
            continue
        m = STWU.match(line)
        if m:
            size += int(m.group(1))
        elif STWUX.match(line):
            dynamic = True
    if fn is not None:
        yield done()


def allowance(fn, limit):
    for pat, most, _ in ALLOWED:
        if re.search(pat, fn):
            return most
    return limit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--objdump", default="powerpc-linux-gnu-objdump")
    a = ap.parse_args()
    every, bad = [], []
    for m in MODULES:
        ko = os.path.join(a.outdir, m)
        for fn, size in frames(ko, a.objdump):
            every.append((size if size is not None else 1 << 30, os.path.basename(m), fn))
            if size is None or size > allowance(fn, a.limit):
                bad.append((size, os.path.basename(m), fn))
    every.sort(reverse=True)
    print(f"stack frames: {len(every)} functions, limit {a.limit} bytes; largest:")
    for size, mod, fn in every[:a.top]:
        print(f"  {size:6d}  {mod}  {fn[:110]}")
    for size, mod, fn in bad:
        what = "a variable-size frame" if size is None else f"a {size}-byte frame"
        print(f"FAIL: {mod}: {fn} has {what} (limit {allowance(fn, a.limit)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
