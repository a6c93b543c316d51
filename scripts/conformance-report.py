#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`make conformance`'s report: reads the CN's console (lines
"POSIX <system> ok <check>" / "POSIX <system> not ok <check>: why" from
qemu/guest/bench/fs.sh in BENCH_MODE=posix), writes the results file and
prints a table, the deviations from the local tmpfs, then CONFORMANCE and
RATIO lines.

    conformance-report.py <cn1.console> <results.txt> <facts>
"""
import re
import sys

# The better configuration of each system family (as make bench's RATIOs).
FAMILIES = {"zoidfs": ("zoidfs", "zoidfs_loose"), "nfs": ("nfs", "nfs3"),
            "v9fs": ("9p", "9p_loose")}
LINE = re.compile(r"^POSIX (\S+) (ok|not ok) ([\w.]+)(?:: (.*))?$")


def main():
    console, out, facts = sys.argv[1:4]
    systems = {}  # system -> {check: (passed, why)}
    order = []
    with open(console, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.replace("\r", "").rstrip("\n"))
            if not m:
                continue
            name, verdict, check, why = m.groups()
            if name not in systems:
                systems[name] = {}
                order.append(name)
            systems[name][check] = (verdict == "ok", why or "")
    if "local" not in systems:
        print("conformance: no results from the local tmpfs (see the console)")
        return 1
    reference = systems["local"]

    def deviations(res):
        """Checks the local tmpfs passes and `res` fails or did not run."""
        dev = [(c, why) for c, (ok, why) in sorted(res.items())
               if not ok and reference.get(c, (False,))[0]]
        return dev + [(c, "not run") for c in sorted(reference) if c not in res]

    lines = [f"# posixcheck on each system ({facts})", "#",
             "# system         passed  total  fails where the local tmpfs passes"]
    for name in order:
        res = systems[name]
        passed = sum(1 for ok, _ in res.values() if ok)
        lines.append(f"{name:<16} {passed:>6} {len(res):>6}  {len(deviations(res))}")
    lines.append("")
    for name in order:
        dev = deviations(systems[name])
        if name != "local" and dev:
            lines.append(f"## {name}: {len(dev)} check(s) the local tmpfs passes")
            lines += [f"  {c}: {why}" for c, why in dev]
    lines.append("")

    def passed(name):
        return sum(1 for ok, _ in systems.get(name, {}).values() if ok)

    for name in order:
        lines.append(f"CONFORMANCE {name} {passed(name)} {len(systems[name])}")
    best = {fam: max((passed(s) for s in members if s in systems), default=None)
            for fam, members in FAMILIES.items()}
    for peer in ("nfs", "v9fs"):
        if best["zoidfs"] and best[peer]:
            lines.append(f"RATIO posix_vs_{peer} {best['zoidfs'] / best[peer]:.3f}")
    text = "\n".join(lines) + "\n"
    with open(out, "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
