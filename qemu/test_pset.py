#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of the pset harness's log parsing (run by `make check`)."""

import importlib.machinery
import importlib.util
import os
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
loader = importlib.machinery.SourceFileLoader("pset", os.path.join(HERE, "pset"))
pset = importlib.util.module_from_spec(importlib.util.spec_from_loader("pset", loader))
loader.exec_module(pset)

BOOT_AND_MODULE_KTAP = """\
    KTAP version 1
    # Subtest: rust_netlink
    1..1
    # test_family_flags_bitfield: ASSERTION FAILED at rust/kernel/net/netlink.rs:342
    not ok 1 test_family_flags_bitfield
not ok 1 rust_netlink
Run /init as init process
treenet: treenet 0.1.0 loaded
KTAP version 1
1..2
    KTAP version 1
    # Subtest: zoid_kernel
    # speed: normal
    1..2
    ok 1 sysfs_writer_formats_within_the_page
    ok 2 crc32c_matches_the_host_vectors # SKIP not on this arch
# zoid_kernel: pass:1 fail:0 skip:1 total:2
ok 1 zoid_kernel
    KTAP version 1
    # Subtest: treenet_sysfs
    1..1
    not ok 1 node_id_knob_accepts_u32_and_refuses_the_rest
not ok 2 treenet_sysfs
""".splitlines()


def node_with(console, dmesg, arch="x86_64"):
    n = pset.Node("cn1", "cn", 1, types.SimpleNamespace(arch=arch))
    for line in console:
        n.feed(line + "\n")
    n.dmesg = dmesg
    return n


FINISHED = [
    "@@ZOID up cn1 cn x86_64 Linux version 7.3.4",
    "@@ZOID module treenet loaded 0.1.0",
    "@@ZOID cmd-begin", "hello", "@@ZOID cmd-end 0",
    "@@ZOID leak 0", "@@ZOID done 0",
]


class KtapTest(unittest.TestCase):
    def test_suites_cases_and_builtin(self):
        suites = pset.parse_ktap(BOOT_AND_MODULE_KTAP)
        self.assertEqual([s["suite"] for s in suites], ["rust_netlink", "zoid_kernel", "treenet_sysfs"])
        self.assertEqual([s["builtin"] for s in suites], [True, False, False])
        self.assertEqual(suites[1]["cases"], [("sysfs_writer_formats_within_the_page", "ok"),
                                             ("crc32c_matches_the_host_vectors", "skip")])
        self.assertTrue(suites[1]["ok"])
        self.assertFalse(suites[2]["ok"])

    def test_module_failure_fails_but_known_kernel_failure_is_a_note(self):
        n = node_with(FINISHED, BOOT_AND_MODULE_KTAP, arch="ppc32")
        problems = n.problems()
        self.assertEqual(problems, ["KUnit suite treenet_sysfs failed: "
                                    "node_id_knob_accepts_u32_and_refuses_the_rest"])
        self.assertEqual(len(n.notes), 1)
        # On x86_64 the netlink failure is not a known one.
        self.assertEqual(len(node_with(FINISHED, BOOT_AND_MODULE_KTAP).problems()), 2)


class ConsoleTest(unittest.TestCase):
    def test_clean_node(self):
        n = node_with(FINISHED, [])
        self.assertEqual(n.problems(), [])
        self.assertEqual(n.cmd_output, ["hello"])
        self.assertEqual(n.up, "Linux version 7.3.4")

    def test_splats_leaks_and_unfinished_nodes_fail(self):
        oops = FINISHED[:3] + ["[   75.1] Kernel panic - not syncing: sysrq triggered crash"]
        self.assertIn("did not finish", node_with(oops, []).problems())
        self.assertTrue(any("splat" in p for p in node_with(oops, []).problems()))
        kasan = FINISHED + ["BUG: KASAN: slab-use-after-free in foo"]
        self.assertTrue(any("splat" in p for p in node_with(kasan, []).problems()))
        leak = [ln.replace("leak 0", "leak 2") for ln in FINISHED]
        self.assertTrue(any("leaked" in p for p in node_with(leak, []).problems()))
        failed_cmd = [ln.replace("cmd-end 0", "cmd-end 3") for ln in FINISHED]
        self.assertIn("command exited 3", node_with(failed_cmd, []).problems())

    def test_leak_check_off_is_told_apart_from_a_clean_one(self):
        clean = node_with(FINISHED, [])
        self.assertTrue(clean.leak_check)
        off = node_with([ln.replace("leak 0", "leak off") for ln in FINISHED], [])
        self.assertEqual(off.problems(), [])
        self.assertIs(off.leak_check, False)
        self.assertIsNone(off.leaks)

    def test_deepest_stack_is_noted_and_a_thin_margin_fails(self):
        deep = ["[   12.5] zoid_worker (212) used greatest stack depth: 5120 bytes left"]
        n = node_with(FINISHED + deep, [])
        self.assertEqual(n.problems(), [])
        self.assertIn("deepest stack at exit: zoid_worker, 5120 bytes left", n.notes)
        thin = deep + ["[   13.0] treenet (3143) used greatest stack depth: 96 bytes left"]
        self.assertTrue(any("stack nearly exhausted: treenet" in p
                            for p in node_with(FINISHED + thin, []).problems()))

    def test_sysrq_dump_at_the_timeout_names_the_stuck_tasks(self):
        dump = [
            "[ 190.3] sysrq: Show State",
            "[ 190.4] task:treenet         state:S stack:0     pid:61    tgid:61    ppid:2",
            "[ 190.4] Call Trace:",
            "[ 190.4]  __schedule+0xa7a/0xe70",
            "[ 190.4]  ? zk_thread_wait+0x17/0xc0 [treenet]",
            "[ 190.4]  schedule_timeout+0x8e/0x120",
            "[ 190.4]  zk_thread_wait+0x7f/0xc0 [treenet]",
            "[ 190.4]  _RNvXs4_NtCsheDuKhwaxIW_12treenet_main6engineNtB5_7TreenetNtNtNtB7_"
            "11zoid_kernel7kthread10ThreadBody3run+0x1a62/0x1c2f [treenet]",
            "[ 190.4]  kthread+0x1ce/0x200",
            "[ 190.5] task:sh              state:S stack:0     pid:212   tgid:212   ppid:156",
            "[ 190.5] Call Trace:",
            "[ 190.5]  __schedule+0xa7a/0xe70",
            "[ 190.5]  schedule_timeout+0x8e/0x120",
            "[ 190.5]  _RNvMs2_NtCsheDuKhwaxIW_12treenet_main6engineNtB5_7Treenet13wait_progress"
            "+0x62/0x90 [treenet]",
            "[ 190.5]  store_trampoline+0x31/0x63 [treenet]",
            "[ 190.5]  kernfs_fop_write_iter+0x1c/0x2a0",
            "[ 190.5]  vfs_write+0x2b0/0x3a0",
            "[ 190.6] task:cat             state:D stack:0     pid:230   tgid:230   ppid:212",
            "[ 190.6] Call Trace:",
            "[ 190.6]  __schedule+0xa7a/0xe70",
            "[ 190.6]  __mutex_lock+0x10/0x200",
            "[ 190.6]  zoidfs_read_iter+0x10/0x200 [zoidfs]",
        ]
        n = node_with(FINISHED[:3] + dump, [])
        n.sysrq_from = 3
        self.assertEqual(
            n.stuck_summary(),
            "cat(230) D in __mutex_lock < zoidfs_read_iter[zoidfs]; "
            "sh(212) S in Treenet::wait_progress[treenet] < trampoline[treenet] < "
            "kernfs_fop_write_iter")
        # The dump's call traces are not splats.
        self.assertFalse(any("splat" in p for p in n.problems()))

    def test_known_boot_splat_before_init_is_a_note(self):
        boot = ["[    0.004664] BUG: KASAN: wild-memory-access in rcu_is_watching+0x20/0x40",
                "[    0.004700] Call Trace:", "[    1.0] Run /init as init process"]
        n = node_with(boot + FINISHED, [])
        self.assertEqual(n.problems(), [])
        self.assertEqual(len(n.notes), 1)
        # The same splat after /init started counts; so does any splat after
        # an excused one, and the pattern is per arch.
        late = ["[    1.0] Run /init as init process", boot[0]]
        self.assertTrue(any("splat" in p for p in node_with(late + FINISHED, []).problems()))
        more = boot + ["[    9.0] BUG: KASAN: slab-use-after-free in treenet_send"]
        problems = node_with(more + FINISHED, []).problems()
        self.assertEqual(problems, ["kernel splat: [    9.0] BUG: KASAN: slab-use-after-free in treenet_send"])
        self.assertTrue(node_with(boot + FINISHED, [], arch="ppc32").problems())
        other = ["[    0.1] BUG: KASAN: slab-out-of-bounds in foo", boot[2]]
        self.assertTrue(node_with(other + FINISHED, []).problems())

    def test_hung_boot_is_detected(self):
        spin = ["[    0.005251] BUG: KASAN: wild-memory-access in rcu_is_watching+0x20/0x40"]
        n = node_with(spin * (pset.BOOT_SPAM_LINES + 1), [])
        n.launched = pset.time.time()
        self.assertTrue(n.boot_hung())
        slow = node_with(spin, [])
        slow.launched = pset.time.time()
        self.assertFalse(slow.boot_hung())
        slow.launched -= pset.BOOT_WAIT + 1
        self.assertTrue(slow.boot_hung())
        up = node_with(FINISHED, [])
        up.launched = 0
        self.assertFalse(up.boot_hung())

    def test_cpu_addresses_are_named_from_the_system_map(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".map") as f:
            f.write("ffffffff81000000 T _stext\n"
                    "ffffffff81000100 t rcu_is_watching\n"
                    "ffffffff81000180 d some_data\n"
                    "ffffffff81000200 T identify_cpu\n")
            f.flush()
            syms = pset.load_system_map(f.name)
        self.assertEqual([name for _, name in syms], ["_stext", "rcu_is_watching", "identify_cpu"])
        self.assertEqual(pset.symbolize(0xffffffff81000120, syms), "rcu_is_watching+0x20")
        self.assertEqual(pset.symbolize(0xffffffff81000200, syms), "identify_cpu+0x0")
        self.assertEqual(pset.symbolize(0x1000, syms), "0x1000")
        self.assertEqual(pset.symbolize(0x1000, []), "0x1000")

    def test_program_counter_is_read_from_info_registers(self):
        x86 = "RAX=0000000000000000 RBX=ffffffff82a0c940\nRIP=ffffffff81234567 RFL=00000246 [---Z-P-] CPL=0"
        ppc = "NIP c0012345   LR c0012300 CTR 00000000 XER 00000000 CPU#0\nMSR 00029000"
        self.assertEqual(pset.PC_REGISTER.search(x86).group(1), "ffffffff81234567")
        self.assertEqual(pset.PC_REGISTER.search(ppc).group(1), "c0012345")

    def test_halt_line_is_seen(self):
        self.assertTrue(node_with(FINISHED + ["reboot: System halted"], []).halted)

    def test_a_failed_guest_test_keeps_its_last_words(self):
        out = ["  # 55 said this", "  # 55-treenet-knobs took 3s", "ok 7 cn2:55-treenet-knobs",
               "  # --- peers", "  # 1 up", "  # selftest 'send 0 1 1' failed: ETIMEDOUT",
               "  # 60-treenet-pset took 700s", "  # 60-treenet-pset steps: 600:+1s end:+9s",
               "not ok 8 cn2:60-treenet-pset", "ok 9 cn2:65-treenet-faults"]
        results, tails = pset.guest_test_results(out)
        self.assertEqual(results, [("cn2:55-treenet-knobs", "ok"), ("cn2:60-treenet-pset", "not ok"),
                                   ("cn2:65-treenet-faults", "ok")])
        self.assertEqual(tails, {"cn2:60-treenet-pset": [
            "--- peers", "1 up", "selftest 'send 0 1 1' failed: ETIMEDOUT"]})


if __name__ == "__main__":
    unittest.main()
