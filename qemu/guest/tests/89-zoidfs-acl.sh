# zoidfs POSIX ACLs (mount option acl, the default): the same workload,
# run as two unprivileged users, on a local tmpfs and on zoidfs gives the
# same modes, ACLs, errnos and permission decisions: the umask with and
# without a directory's default ACL (inherited by files and directories),
# access ACLs granting a named user and a named group, the mask following
# chmod, removal, listxattr, a malformed ACL.  Permission checks on files
# without an ACL cost no call, and an ACL is fetched once while its file's
# ctime stays.  An ACL set on one CN is obeyed on the others; a noacl
# mount has none (EOPNOTSUPP) and the VFS's umask.  The export is a fresh
# tmpfs (CONFIG_TMPFS_POSIX_ACL), left mounted as in 89-zoidfs-special.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
ZX=/zoid/bin/zxattr
X=/zfs-acl-export
M=/mnt/zfs-acl
L=/tmp/acl-local
zst() { counter $ZFS/stats "$1"; }
fail() {
  echo "$*"
  nonzero "zoidfs stats" $ZFS/stats
  dmesg | grep -i zoidfs | tail -5
  exit 1
}
# as <uid> <command>: runs it as user u<uid>, output and errors together,
# and a failure's exit status (never fails itself: this runs under sh -e).
as() { u=$1; shift; su -s /bin/sh "u$u" -c "$*" 2>&1 || echo "(exit $?)"; }

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && mount -t tmpfs -o mode=1777 tmpfs $X && echo $X > $Z/export
fi
barrier 985
if [ "$ZOID_ROLE" = cn ]; then
  cp /etc/passwd /tmp/passwd.acl
  cp /etc/group /tmp/group.acl 2>/dev/null || : > /tmp/group.acl
  for u in 1001 1002; do echo "u$u:x:$u:$u::/:/bin/sh" >> /etc/passwd; done
  printf 'g1001:x:1001:\ng1002:x:1002:\ng1003:x:1003:u1002\n' >> /etc/group
  [ "$(as 1002 'id -G')" = "1002 1003" ] || fail "u1002's groups: $(as 1002 'id -G')"
  # show <file...>: mode, owner and access ACL of each, as their owner sees them.
  cat > /tmp/acl-show <<EOF
for f in "\$@"; do echo "\$f \$(stat -c '%a %u %g' "\$f") \$($ZX getacl "\$f" access)"; done
EOF
  workload() { # <directory of mode 1777>
    d=$1/w
    as 1001 "mkdir $d && chmod 755 $d"
    show() { as 1001 "cd $d && sh /tmp/acl-show $*"; }
    # No default ACL: the umask applies.
    as 1001 "umask 002; cd $d && touch f0 && mkdir d0 && mkfifo q0"
    show f0 d0 q0
    # A default ACL: inherited, and the umask does not apply.
    as 1001 "cd $d && mkdir d && $ZX setacl d default u::rwx,u:1002:rwx,g::r-x,m::rwx,o::---"
    as 1001 "$ZX getacl $d/d default; $ZX getacl $d/d access"
    as 1001 "umask 077; cd $d && touch d/f1 && mkdir d/sub && echo in > d/f2"
    show d/f1 d/f2 d/sub
    as 1001 "$ZX getacl $d/d/sub default"
    echo "u1002 reads d/f2: $(as 1002 "cat $d/d/f2")"
    # An access ACL for a named user; the mask follows chmod.
    as 1001 "echo secret > $d/p && chmod 600 $d/p"
    echo "u1002 without ACL: $(as 1002 "cat $d/p")"
    as 1001 "$ZX setacl $d/p access u::rw-,u:1002:r--,g::---,m::r--,o::---"
    show p
    echo "u1002 with ACL: $(as 1002 "cat $d/p")"
    echo "u1002 appends: $(as 1002 "echo x >> $d/p")"
    as 1001 "chmod 600 $d/p"
    show p
    echo "u1002 after chmod 600: $(as 1002 "cat $d/p")"
    as 1001 "chmod 640 $d/p"
    echo "u1002 after chmod 640: $(as 1002 "cat $d/p")"
    # A named group u1002 belongs to.
    as 1001 "$ZX setacl $d/p access u::rw-,g::---,g:1003:rw-,m::rw-,o::---"
    echo "u1002 in g1003: $(as 1002 "echo more >> $d/p && cat $d/p")"
    as 1001 "$ZX list $d/p"
    # Removal, and an ACL the kernel refuses.
    as 1001 "$ZX rmacl $d/p access"
    show p
    echo "u1002 after rmacl: $(as 1002 "cat $d/p")"
    as 1001 "$ZX list $d/p; $ZX rmacl $d/p access"
    as 1001 "$ZX setacl $d/p access u::rw-,u:1002:r--"
    as 1001 "$ZX setacl $d/p default u::rw-,g::---,o::---"
    echo "u1002 sets u1001's ACL: $(as 1002 "$ZX setacl $d/p access u::rwx,g::---,o::---")"
  }

  mkdir -p $L $M
  mount -t tmpfs -o mode=1777 tmpfs $L || fail "no local tmpfs"
  mount -t zoidfs zoidfs $M || fail "mount"
  grep " $M " /proc/mounts | grep -Eq ",acl( |,)" || fail "acl not in the options: $(grep " $M " /proc/mounts)"
  D=$M/cn$ZOID_NODE_ID
  mkdir $D && chmod 1777 $D
  workload $L > /tmp/acl.local 2>&1
  workload $D > /tmp/acl.zoidfs 2>&1
  sed "s|$D|DIR|g" /tmp/acl.zoidfs > /tmp/acl.z
  sed "s|$L|DIR|g" /tmp/acl.local > /tmp/acl.l
  if ! cmp -s /tmp/acl.l /tmp/acl.z; then
    echo "--- tmpfs"; cat /tmp/acl.l; echo "--- zoidfs"; cat /tmp/acl.z
    fail "zoidfs and tmpfs differ"
  fi
  grep -q "u1002 with ACL: secret" /tmp/acl.z || fail "the ACL did not grant: $(cat /tmp/acl.z)"
  grep -q "d/f1 660 1001 1001 u::rw-,u:1002:rwx,g::r-x,m::rw-,o::---" /tmp/acl.z ||
    fail "not inherited: $(cat /tmp/acl.z)"

  # Costs: no call for a file without an ACL, one fetch while the ctime stays.
  as 1001 "echo open > $D/w/open && chmod 644 $D/w/open && echo secret > $D/w/acl && $ZX setacl $D/w/acl access u::rw-,u:1002:r--,g::---,m::r--,o::---"
  g0=$(zst getxattr)
  [ "$(as 1002 "cat $D/w/open $D/w/open")" = "open
open" ] || fail "u1002 cannot read open"
  [ "$(zst getxattr)" = "$g0" ] || fail "checks on a file without an ACL called getxattr $(($(zst getxattr) - g0)) times"
  [ "$(as 1002 "cat $D/w/acl $D/w/acl")" = "secret
secret" ] || fail "u1002 cannot read acl"
  [ "$(zst getxattr)" -le $((g0 + 1)) ] || fail "the ACL was fetched $(($(zst getxattr) - g0)) times"
  # For the other CNs: a file only u1002 may read, through an ACL.
  as 1001 "echo shared > $D/w/shared && chmod 600 $D/w/shared"
  [ "$(as 1002 "cat $D/w/shared")" != shared ] || fail "shared readable before its ACL"
  out=$(as 1001 "$ZX setacl $M/cn$ZOID_NODE_ID/w/shared access u::rw-,u:1002:r--,g::---,m::r--,o::---")
  [ -z "$out" ] || fail "setacl shared: $out"
fi
barrier 986
if [ "$ZOID_ROLE" = cn ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    f=$M/cn$i/w/shared
    [ "$(as 1002 "cat $f")" = shared ] || fail "cn$i's ACL not obeyed on cn$ZOID_NODE_ID: $(as 1002 "cat $f")"
  done
  umount $M
  # noacl: no ACLs, and the VFS applies the umask.
  mount -t zoidfs -o noacl zoidfs $M || fail "mount noacl"
  grep " $M " /proc/mounts | grep -Eq ",noacl( |,)" || fail "noacl not in the options"
  expect_fail 95 $ZX getacl $D/w/acl access || fail "noacl getacl"
  as 1001 "umask 027; touch $D/w/n0"
  [ "$(stat -c %a $D/w/n0)" = 640 ] || fail "noacl umask: $(stat -c %a $D/w/n0)"
  umount $M
  umount $L
  cp /tmp/passwd.acl /etc/passwd
  cp /tmp/group.acl /etc/group
fi
barrier 987
