# Shared by the zoidfs tests (sourced after treenet-lib.sh).

# The workload, run in the current directory; prints what a reader of the
# files would see (no owners or times: those differ by design).
workload() {
  echo hello > a; cat a
  echo more >> a; cat a                      # O_APPEND
  dd if=/tmp/zfs-rand of=f bs=4096 count=64 2>/dev/null; md5sum f
  dd if=f of=g bs=1000 skip=7 count=30 2>/dev/null; md5sum g   # odd offsets
  dd if=/tmp/zfs-rand of=f bs=100 seek=1 count=50 conv=notrunc 2>/dev/null; md5sum f
  stat -c '%s %h %a %F' a f g
  mkdir d; mkdir d/e; touch d/e/x; ls -a d | tr '\n' ' '; echo
  ln a d/hard; stat -c '%h' a d/hard
  ln -s ../a d/sym; readlink d/sym; cat d/sym; stat -c '%F' d/sym
  mv a b; [ -e a ] || echo "a gone"; cat b d/hard
  rmdir d 2>&1 | sed 's/.*: //'              # ENOTEMPTY
  rm d/e 2>&1 | sed 's/.*: //'               # EISDIR
  cat nosuch 2>&1 | sed 's/.*: //'           # ENOENT
  mkdir d 2>&1 | sed 's/.*: //'              # EEXIST
  chmod 640 b; stat -c '%a' b
  touch -d '2020-01-02 03:04:05' b; stat -c '%Y' b
  truncate -s 3 b; cat b; echo
  truncate -s 100000 b; stat -c '%s' b; md5sum b
  dd if=/dev/zero of=sparse bs=1 count=1 seek=5368709120 2>/dev/null
  stat -c '%s' sparse                        # > 4 GiB
  dd if=sparse of=/dev/null bs=1 skip=5368709119 2>/dev/null && echo "read past 4G"
  ( set -C; echo x > b ) 2>&1 | sed 's/.*: //'   # O_EXCL on an existing file
  ( set -C; echo x > excl ); cat excl
  for i in $(seq 1 40); do : > "many-$i"; done; ls | grep -c '^many-'
  rm many-*; ls | tr '\n' ' '; echo
  mv b d/e/moved; ls d/e | tr '\n' ' '; echo
  rm -r d; ls | tr '\n' ' '; echo
  head -c 100 f | md5sum                     # mmap-free partial read
}
