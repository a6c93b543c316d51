#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`make check`: zoid's whole test suite, ending with `N passed, N failed`.

Steps (each counted; a failure does not stop the later independent steps):
  * host: `cargo test` of rust/zoid_proto and rust/zoid_sim (every test
    counts), clippy and rustfmt on both host crates, unit tests of the pset
    harness's log parsing;
  * rustfmt (kernel's .rustfmt.toml) on every kernel-side Rust file;
  * per arch (x86_64 debug, ppc32 debug): kernel build (cached), module build
    with warnings as errors and clippy (W=e CLIPPY=1) (ppc32: every function's
    stack frame within budget, scripts/check-stack-frames.py), then a pset boot where
    every node runs the in-guest integration tests (x86_64: ION + 1 CN,
    ppc32: ION + 2 CNs); every KUnit test case and
    every in-guest test on every node counts, and each node counts once more
    for its health (modules loaded and unloaded, no splat, no leak);
    then the power cuts and module reload loops, each in a pset of its
    own; on x86_64 only a pset of LEAK_TESTS and the reload loops run
    with kmemleak, the others without it.

Set ZOID_CHECK_ARCHES="x86_64" (say) to run a subset while developing.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "out", "check")
passed = 0
failed = 0
failures = []
START = time.time()
# Lines of a failed pset node's command output repeated in the final report
# (CI keeps only the end of `make check`'s output, no guest logs).
REPORT_TAIL_LINES = 4
# Console lines reported of each boot of a node that never came up.
BOOT_TAIL_LINES = 10


def record(ok, what, count=1, details=()):
    """Counts a result; a failure's `details` (lines) are repeated at the end."""
    global passed, failed
    if ok:
        passed += count
    else:
        failed += count
        failures.append((what, list(details)))
    print(f"check: {'ok    ' if ok else 'FAILED'} [{time.time() - START:5.0f}s] {what}"
          + (f" ({count})" if count != 1 else ""), flush=True)


def note(what):
    """An uncounted progress line with the time since the start."""
    print(f"check:        [{time.time() - START:5.0f}s] {what}", flush=True)


def run(cmd, log_name, **kw):
    """Runs cmd with output to out/check/<log_name>.log; returns (ok, output)."""
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, log_name + ".log")
    start = time.time()
    with open(path, "w") as f:
        p = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, **kw)
        f.write(p.stdout)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-30:])
        print(f"check: --- {log_name} failed after {time.time() - start:.0f}s, "
              f"last lines (full log: {path}):\n{tail}", flush=True)
    return p.returncode == 0, p.stdout


# Host crates: (directory, log name prefix, label).
HOST_CRATES = [("rust/zoid_proto", "host", "host"),
               ("rust/zoid_sim", "sim", "sim (treenet simulator)")]


def host_checks():
    for crate, log, label in HOST_CRATES:
        manifest = ["--manifest-path", crate + "/Cargo.toml"]
        ok, out = run(["cargo", "test", "--locked"] + manifest, log + "-cargo-test")
        n_pass = sum(int(m) for m in re.findall(r"test result: \w+\. (\d+) passed", out))
        n_fail = sum(int(m) for m in re.findall(r"(\d+) failed;", out))
        if n_pass:
            record(True, f"{label} cargo test", n_pass)
        if n_fail or not ok:
            record(False, f"{label} cargo test", max(n_fail, 1))
        ok, _ = run(["cargo", "clippy", "--locked", "--all-targets"] + manifest
                    + ["--", "-D", "warnings"], log + "-clippy")
        record(ok, f"{label} clippy (-D warnings)")
        ok, _ = run(["cargo", "fmt", "--check"] + manifest, log + "-rustfmt")
        record(ok, f"{label} rustfmt")
    ok, out = run([sys.executable, "qemu/test_pset.py"], "host-pset-harness")
    ran = re.search(r"Ran (\d+) test", out)
    n_bad = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", out))
    n_bad = n_bad or (0 if ok else 1)
    if ran and int(ran.group(1)) > n_bad:
        record(True, "host tests of the pset harness", int(ran.group(1)) - n_bad)
    if n_bad:
        record(False, "host tests of the pset harness", n_bad)


def kernel_rustfmt():
    ok, src = run([os.path.join(REPO, "scripts/fetch-kernel.sh")], "fetch-kernel")
    if not ok:
        record(False, "fetch kernel source")
        return
    ksrc = src.strip().splitlines()[-1]
    files = subprocess.run(["git", "ls-files", "*.rs"], cwd=REPO, stdout=subprocess.PIPE,
                           text=True, check=True).stdout.split()
    files = [f for f in files if not f.startswith(("rust/zoid_proto/", "rust/zoid_sim/"))]
    ok, _ = run(["rustfmt", "--check", "--edition", "2021", "--config-path",
                 os.path.join(ksrc, ".rustfmt.toml")] + files, "kernel-rustfmt")
    record(ok, f"rustfmt (kernel style) on {len(files)} kernel-side files")


# vCPUs of every node of an x86_64 pset: real CNs and IONs are many-core,
# and races between a node's CPUs (softirq against thread, two callers,
# two writers) only happen on more than one.  Multi-threaded TCG runs
# them on host threads of their own.  (PPC440 is single-core.)
X86_64_SMP = "2"


def run_pset(arch, flavor, cns, kdir, logdir, timeout, cmd, extra, logname):
    """qemu/pset with `cmd` on every node: (exit ok, its summary.json or None)."""
    smp = ["--smp", X86_64_SMP] if arch == "x86_64" else []
    ok, _ = run([os.path.join(REPO, "qemu/pset"), "--arch", arch, "--flavor", flavor,
                 "--cns", cns, "--kdir", kdir, "--timeout", timeout, "--log", logdir,
                 "--ion-cmd", cmd, "--cn-cmd", cmd, *smp, *extra], logname)
    summary_path = os.path.join(logdir, "summary.json")
    if not os.path.exists(summary_path):
        return ok, None
    with open(summary_path) as f:
        return ok, json.load(f)


def failed_test_words(name, node):
    """What each failed in-guest test of a node said last: why it failed."""
    out = []
    for test, tail in node.get("failed_test_tails", {}).items():
        out.append(f"{name}| --- {test}:")
        out += [f"{name}| {ln}" for ln in tail] or [f"{name}| (nothing)"]
    return out


def failed_commands(summary):
    """The last lines of every pset node whose command failed: why it did."""
    out = []
    for name, node in summary["nodes"].items():
        if any(p.startswith(("command exited", "did not finish", "timed out"))
               for p in node["problems"]):
            out += [f"{name}| {ln}" for ln in node.get("cmd_tail", [])[-REPORT_TAIL_LINES:]]
        # A node that never reached /init: what each of its boots printed last.
        for i, tail in enumerate(node.get("boot_tails", []), 1):
            out.append(f"{name}| --- boot {i}, last console lines:")
            out += [f"{name}| {ln}" for ln in tail[-BOOT_TAIL_LINES:]] or [f"{name}| (nothing)"]
    return out


def arch_checks(arch, flavor="debug"):
    t0 = time.time()
    ok, out = run([os.path.join(REPO, "scripts/build-kernel.sh"), arch, flavor],
                  f"{arch}-kernel")
    record(ok, f"{arch}/{flavor} kernel build ({time.time() - t0:.0f}s)")
    if not ok:
        return
    kdir = out.strip().splitlines()[-1]
    t0 = time.time()
    ok, _ = run([os.path.join(REPO, "scripts/build-modules.sh"), arch, flavor, kdir],
                f"{arch}-modules", env=dict(os.environ, CLIPPY="1"))
    record(ok, f"{arch} modules build, warnings as errors, clippy ({time.time() - t0:.0f}s)")
    if not ok:
        return
    if arch == "ppc32":
        # 8 KiB stacks: no Rust function may take a big bite of one.
        ok, out = run([os.path.join(REPO, "scripts/check-stack-frames.py"),
                       os.path.join(REPO, "out", f"{arch}-{flavor}")], f"{arch}-stack-frames")
        largest = next((ln.split()[0] for ln in out.splitlines()[1:2]), "?")
        record(ok, f"{arch} stack frames within budget (largest {largest} bytes)")
    adds = []
    tools = [f"zoid/{t}" for t in
             ("zoidcall", "zoidunix", "f2cn", "zoidfsctl", "zfsx", "fsbench", "zxattr",
              "zattack", "zoid-job-run", "zoid-job", "posixcheck", "zhold")]
    for path in tools + ["ssi/ssimap", "treenet/tnflood"]:
        tool = os.path.basename(path)
        ok, out = run([os.path.join(REPO, "scripts/build-guest-tool.sh"), arch,
                       f"tools/{path}.c"], f"{arch}-{tool}")
        record(ok, f"{arch} {tool} build (static, warnings as errors)")
        if not ok:
            return
        # (zoid-job-run where the job plug-in looks for it: job_runner.)
        where = "/sbin" if tool == "zoid-job-run" else "/zoid/bin"
        adds += ["--add", f"{out.strip().splitlines()[-1]}:{where}/{tool}"]
    adds += ["--add", f"{os.path.join(REPO, 'tools/zoid/zoid-stat')}:/zoid/bin/zoid-stat"]
    logdir = os.path.join(OUT, f"{arch}-pset")
    # The main pset: x86_64 (KASAN, lockdep) with ION + 1 CN, ppc32 (no
    # KASAN, several times faster per operation) with ION + 2 CNs, where
    # the tests' cross-CN parts run (coherence, broadcast, one CN's flood
    # against another's session).  Under TCG on two host cores, three
    # KASAN VMs saturated the host and the ION: x86_64's main pset took
    # 2360 s with 2 CNs.  The power cuts below keep 2 CNs on x86_64.
    main_cns = "1" if arch == "x86_64" else "2"
    cns = "2" if arch == "x86_64" else "1"
    # The whole suite runs without kmemleak (KASAN and lockdep stay on):
    # its bookkeeping of every allocation made the x86_64 debug pset about
    # twice as slow under TCG (a treenet ping 57-82 ms against 28-29 ms,
    # null call 58-72 ms against 23-32 ms).  Leaks are looked for in the
    # psets that follow: a chosen set of the same tests, and module
    # reloads.
    ok, summary = run_pset(arch, flavor, main_cns, kdir, logdir, "3000", "/zoid/tests/run",
                           adds + NO_KMEMLEAK, f"{arch}-pset")
    if summary is None:
        record(False, f"{arch} pset boot (no summary)")
        return
    for name, node in summary["nodes"].items():
        suites = [s for s in node["kunit"] if not s["builtin"]]
        cases = [(s["suite"], c, st) for s in suites for c, st in s["cases"]]
        k_pass = sum(1 for *_, st in cases if st == "ok")
        k_fail = [f"{s}.{c}" for s, c, st in cases if st == "not ok"]
        if k_pass:
            record(True, f"{arch} {name} KUnit cases in {len({s['suite'] for s in suites})} suites",
                   k_pass)
        if k_fail:
            record(False, f"{arch} {name} KUnit: {', '.join(k_fail)}", len(k_fail))
        if not suites:
            record(False, f"{arch} {name}: no KUnit output")
        g_pass = sum(1 for _, st in node["guest_tests"] if st == "ok")
        g_fail = [t for t, st in node["guest_tests"] if st == "not ok"]
        if g_pass:
            record(True, f"{arch} {name} in-guest tests", g_pass)
        if g_fail:
            record(False, f"{arch} {name} in-guest: {', '.join(g_fail)}", len(g_fail),
                   details=failed_test_words(name, node))
        problems = node["problems"]
        record(not problems, f"{arch} {name} healthy ({summary['seconds']}s run)"
               + (": " + "; ".join(problems) if problems else ""),
               details=failed_commands({"nodes": {name: node}}))
    if not ok and all(not n["problems"] for n in summary["nodes"].values()):
        record(False, f"{arch} pset exit status")
    if arch == "x86_64":
        leak_test(arch, flavor, kdir, adds)
    else:
        # (ppc32: three fast nodes; KASAN's x86_64 would need minutes more.)
        tree_test(arch, flavor, kdir, adds)
    # Power cuts (qemu/pset's `@@ZOID crash`), each in a pset of its own.
    crash_test(arch, flavor, kdir, "crash-ion", cns,
               "ION power cut mid-workload, ext4 export, {cns} CN(s) writing",
               ["--ion-disk", "64", "--add",
                os.path.join(REPO, "qemu/guest/tests/crash-ion.pre-modules")
                + ":/zoid/run/pre-modules"] + NO_KMEMLEAK)
    # (Without kmemleak too: with it, 608 s here against crash-ion's 415 s
    # without; leaks of the module lifecycle are read in reload-loops.)
    # (The tools: the ION launches a job on both CNs with zoid-job.)
    crash_test(arch, flavor, kdir, "crash-cn", "2",
               "CN power cut holding relaxed write-back data and a job's rank, {cns} CNs",
               adds + NO_KMEMLEAK)
    # Module lifecycle loops, also alone (what follows them in one boot
    # is not yet reliable: docs/reliability.md).
    # 100 loads per CN on ppc32; 10 under KASAN and kmemleak (x86_64),
    # where 20 took 555-831 s of CI's 5400 (qemu/pset with
    # `RELOAD_LOOPS=100 sh -e /zoid/tests/reload-loops.sh` as the command
    # runs 100 there).  A leak of every load shows as ten there.
    loops = 10 if arch == "x86_64" else 100
    crash_test(arch, flavor, kdir, "reload-loops", cns,
               f"{loops} module reloads per CN and 10 on the ION with traffic, {{cns}} CN(s)", [],
               must_crash=False, env=f"RELOAD_LOOPS={loops} ")


# Kernel command line for a pset that runs without kmemleak (arch_checks).
# A node so booted reports `leak off`, never a clean leak count.
NO_KMEMLEAK = ["--append", "kmemleak=off"]
# The in-guest tests the leak pset runs with kmemleak on: each module's
# common paths (treenet's messages and broadcast; zoid's calls, unix
# forwarding and job hooks; zoidfs's handles, special files and relaxed
# write-back; ssi's sets, process events, mappings, checkpoints), on an
# ION and one CN.
LEAK_TESTS = ("10-modules-loaded 70-treenet-broadcast 80-zoid-calls 82-zoid-unix "
              "84-zoid-jobs 86-zoid-launch 87-zoidfs-handles 89-zoidfs-special 89-zoidfs-relaxed "
              "89-ssi-sets 89-ssi-procs 89-ssi-mmap 89-ssi-checkpoint 89-faults-alloc")


def list_pset(arch, flavor, kdir, name, cns, tests, extra, title, leak_check=False):
    """The in-guest `tests` (tests/run) in a pset of their own: every node
    must finish healthy and pass them, and with `leak_check` its kmemleak
    read must find nothing of zoid's modules (with them loaded, and after
    they are unloaded)."""
    logdir = os.path.join(OUT, f"{arch}-{name}")
    t0 = time.time()
    ok, summary = run_pset(arch, flavor, cns, kdir, logdir, "1500",
                           "/zoid/tests/run " + tests, extra, f"{arch}-{name}")
    title = f"{arch} {title}, {len(tests.split())} in-guest tests"
    if summary is None:
        record(False, f"{title} (no summary)")
        return
    nodes = summary["nodes"]
    problems = [f"{name}: {p}" for name, n in nodes.items() for p in n["problems"]]
    problems += [f"{name}: in-guest {t} failed" for name, n in nodes.items()
                 for t, st in n["guest_tests"] if st != "ok"]
    if leak_check:
        problems += [f"{name}: kmemleak was not read" for name, n in nodes.items()
                     if n.get("leak_check") is not True]
    record(ok and not problems, f"{title} ({time.time() - t0:.0f}s)"
           + (": " + "; ".join(problems) if problems else ""),
           details=failed_commands(summary) + [ln for name, n in nodes.items()
                                               for ln in failed_test_words(name, n)])


def leak_test(arch, flavor, kdir, adds):
    """LEAK_TESTS on an ION and one CN with kmemleak on."""
    list_pset(arch, flavor, kdir, "leaks", "1", LEAK_TESTS, adds, "kmemleak pset, 1 CN",
              leak_check=True)


# What a deeper tree runs (qemu/pset --below 2:1: CN 2's only link goes to
# CN 1, which relays for it): treenet's relaying, routing and peer events
# first, then zoid and zoidfs from a CN two hops from its ION.
TREE_TESTS = ("10-modules-loaded 71-treenet-relay 60-treenet-pset 70-treenet-broadcast "
              "80-zoid-calls 82-zoid-unix 86-zoid-f2cn 87-zoidfs-handles 89-zoid-forged-replies "
              "89-zoidfs-mount")


def tree_test(arch, flavor, kdir, adds):
    """TREE_TESTS in a pset whose CN 2 hangs below CN 1."""
    list_pset(arch, flavor, kdir, "tree", "2", TREE_TESTS, adds + ["--below", "2:1"],
              "tree pset (CN 2 below CN 1, which relays for it)")


def crash_test(arch, flavor, kdir, script, cns, title, extra, must_crash=True, env=""):
    """qemu/guest/tests/<script>.sh as every node's command, in a pset of its
    own.  The run must pass; a power-cut script (`must_crash`) makes one
    node ask for its crash, and that node must have booted again."""
    logdir = os.path.join(OUT, f"{arch}-{script}")
    # In step as one test of tests/run: a node whose script fails tells
    # the others (abort), whose barriers then fail at once instead of
    # waiting 600 s for it (CI's one failed crash-ion run spent 1104 s).
    selftest = "2>/dev/null > /sys/kernel/treenet/selftest"
    cmd = (f"echo begin 1 {selftest}; {env}sh -e /zoid/tests/{script}.sh"
           f" || {{ echo abort {selftest}; exit 1; }}")
    title = f"{arch} " + title.format(cns=cns)
    t0 = time.time()
    ok, summary = run_pset(arch, flavor, cns, kdir, logdir, "1500", cmd, extra,
                           f"{arch}-{script}")
    if summary is None:
        record(False, f"{title} (no summary)")
        return
    nodes = summary["nodes"]
    problems = [f"{name}: {p}" for name, n in nodes.items() for p in n["problems"]]
    if must_crash and not any("crashed on request" in note
                              for n in nodes.values() for note in n["notes"]):
        problems.append("no node asked for its power cut")
    record(ok and not problems, f"{title} ({time.time() - t0:.0f}s)"
           + (": " + "; ".join(problems) if problems else ""),
           details=failed_commands(summary))


def main():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stopped)
    ok, _ = run([os.path.join(REPO, "scripts/setup.sh")], "setup")
    if not ok:
        record(False, "setup (scripts/setup.sh)")
    else:
        note("prerequisites present (scripts/setup.sh)")
        try:
            host_checks()
            kernel_rustfmt()
            for arch in os.environ.get("ZOID_CHECK_ARCHES", "x86_64 ppc32").split():
                arch_checks(arch)
        except Stopped as e:
            # Killed (a CI time limit): the report of what ran so far, as
            # the last lines CI keeps, rather than none.
            signum = e.args[0]
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            print(f"\ncheck: stopped by signal {signum} in the step after the last one above",
                  flush=True)
            record(False, "make check did not finish")
            report()
            return 128 + signum
    report()
    return 1 if failed else 0


def report():
    """The final report: every failure again, with its details, and the counts."""
    print(f"check: {time.time() - START:.0f}s; logs in {OUT}")
    for what, details in failures:
        print(f"check: failed: {what}")
        for line in details:
            print(f"check:     {line}")
    print(f"{passed} passed, {failed} failed", flush=True)


class Stopped(Exception):
    """A signal asked make check to stop (CI's time limit, ^C)."""


def stopped(signum, _frame):
    """Signal handler: unwinds to main (a running step's child is killed on
    the way, by subprocess.run), which reports what ran so far."""
    raise Stopped(signum)

if __name__ == "__main__":
    sys.exit(main())
