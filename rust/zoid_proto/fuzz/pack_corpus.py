#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Shrinks a fuzz corpus to the few files kept in the repository.

    pack_corpus.py <target> [budget-bytes]    (run in rust/zoid_proto/fuzz)

`cargo fuzz cmin` keeps one file per input that adds a coverage edge, which
is still dozens of files.  This script asks libFuzzer (the target built by
`cargo +nightly fuzz build`) which edges and features each corpus file
reaches, picks greedily every edge and then the most features within the
budget, and joins the picked inputs into files of at most 8 KiB (treenet_rx,
zoid_dispatch) or 4 KiB (grant_queue) with the drivers' restart records, so one file
replays several inputs from a fresh state.  It checks that the packed corpus
still reaches every edge (adding single inputs back if not) and replaces
corpus/<target>/.
"""

import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

BIN = "target/x86_64-unknown-linux-gnu/release/{}"
MAX_FRAME = 16 + 1484 + 16


def rx_canon(d):
    """Config byte and the records re-encoded with their exact lengths."""
    cfg, rest, recs = d[0], d[1:], b""
    while len(rest) >= 3:
        n = min(struct.unpack(">H", rest[1:3])[0], MAX_FRAME, len(rest) - 3)
        recs += rest[:1] + struct.pack(">H", n) + rest[3 : 3 + n]
        rest = rest[3 + n :]
    return cfg, recs


def rx_join(cfg, body):
    return b"\x80" + struct.pack(">H", 1) + bytes([cfg]) + body  # CTRL_RESTART


def gq_canon(d):
    ops = d[1:]
    return d[0], ops[: len(ops) // 2 * 2]


def gq_join(cfg, body):
    return bytes([7, 0x80 | (cfg % 10)]) + body  # set_slots | GRANT_RESTART


def zd_canon(d):
    """Config byte and the records re-encoded with their exact lengths."""
    cfg, rest, recs = d[0], d[1:], b""
    while len(rest) >= 3:
        n = min(struct.unpack(">H", rest[1:3])[0], len(rest) - 3)
        recs += rest[:1] + struct.pack(">H", n) + rest[3 : 3 + n]
        rest = rest[3 + n :]
    return cfg, recs


def zd_join(cfg, body):
    return b"\x80" + struct.pack(">H", 1) + bytes([cfg]) + body  # ZCTRL_RESTART


# canonicaliser, joiner, packed file size limit, default byte budget
TARGETS = {
    "treenet_rx": (rx_canon, rx_join, 8192, 140_000),
    "grant_queue": (gq_canon, gq_join, 4096, 30_000),
    "zoid_dispatch": (zd_canon, zd_join, 8192, 120_000),
}


def coverage(target, corpus):
    """{file: (edges, features)} as libFuzzer's merge sees them."""
    with tempfile.TemporaryDirectory() as tmp:
        ctl = os.path.join(tmp, "control")
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        subprocess.run(
            [BIN.format(target), "-merge=1", "-max_len=1048576",
             "-merge_control_file=" + ctl, empty, corpus],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lines = open(ctl).read().split("\n")
    n = int(lines[0])
    files = lines[2 : 2 + n]
    ft, cov = {}, {}
    for line in lines[2 + n :]:
        p = line.split()
        if p and p[0] in ("FT", "COV"):
            (ft if p[0] == "FT" else cov)[files[int(p[1])]] = set(map(int, p[2:]))
    return {f: (cov.get(f, set()), ft.get(f, set())) for f in files if f in ft}


def greedy(cov, budget):
    """Files covering every edge, then the most features within budget."""
    size = {f: os.path.getsize(f) for f in cov}
    chosen, edges, feats, total = [], set(), set(), 0
    for which in (0, 1):
        while True:
            got = edges if which == 0 else feats
            best = max(
                (f for f in cov if f not in chosen and total + size[f] <= budget),
                key=lambda f: (len(cov[f][which] - got), -size[f]),
                default=None)
            if best is None or not cov[best][which] - got:
                break
            chosen.append(best)
            edges |= cov[best][0]
            feats |= cov[best][1]
            total += size[best]
    return chosen


def pack(target, files, out):
    canon, join, limit, _ = TARGETS[target]
    packed, cur = [], None
    for f in files:
        d = open(f, "rb").read()
        if not d:
            continue
        cfg, body = canon(d)
        if cur is not None and len(cur) + len(join(cfg, body)) <= limit:
            cur += join(cfg, body)
        else:
            if cur is not None:
                packed.append(cur)
            cur = bytes([cfg]) + body
    if cur is not None:
        packed.append(cur)
    for p in packed:
        with open(os.path.join(out, hashlib.sha1(p).hexdigest()), "wb") as fh:
            fh.write(p)


def main():
    target = sys.argv[1]
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else TARGETS[target][3]
    corpus = os.path.join("corpus", target)
    cov = coverage(target, corpus)
    want = set().union(*(c for c, _ in cov.values()))
    out = tempfile.mkdtemp()
    pack(target, greedy(cov, budget), out)
    while True:
        have = set().union(*(c for c, _ in coverage(target, out).values()))
        missing = want - have
        if not missing:
            break
        f = max(cov, key=lambda f: (len(cov[f][0] & missing), -os.path.getsize(f)))
        if not cov[f][0] & missing:
            print(f"{len(missing)} edges not reproducible, ignored")
            break
        shutil.copy(f, out)
    shutil.rmtree(corpus)
    shutil.move(out, corpus)
    sizes = [os.path.getsize(os.path.join(corpus, f)) for f in os.listdir(corpus)]
    print(f"{target}: {len(want)} edges, {len(sizes)} files, {sum(sizes)} bytes")


if __name__ == "__main__":
    main()
