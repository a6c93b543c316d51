# f2cn: the ION copies files to the same path on its CNs over treenet
# broadcast; every CN checks them by checksum.  Failures name the CN: a
# missing directory on the CNs, a CN that is down (refused at once).
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
F2CN=/zoid/bin/f2cn
S=/tmp/f2cn-src
D=/tmp/f2cn
fstat() { counter $Z/f2cn "$1"; }
fdiag() { echo "--- f2cn"; cat $Z/f2cn; diag; }
# expect_errno <n> <command...>: the command fails with errno n.
expect_errno() {
  want=$1; shift
  if out=$("$@" 2>&1); then echo "expected errno $want: $* succeeded: $out"; return 1; fi
  echo "$out" | grep -q "($want)\$" || { echo "expected errno $want: $out"; return 1; }
  echo "$out"
}

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $S
  # Three full 1 MiB chunks and a partial one, random bytes.
  head -c 3150000 /dev/urandom > $S/data.bin
  chmod 640 $S/data.bin
  (cd $S && md5sum data.bin) > $S/data.md5
  : > $S/empty
  echo one > $S/one
fi
barrier 860
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $D
  echo stale > $D/data.bin          # replaced whole
fi
barrier 861
if [ "$ZOID_ROLE" = ion ]; then
  $F2CN -t 600 $S/data.bin $D/data.bin || { fdiag; exit 1; }
  $F2CN -t 600 $S/data.md5 $D/data.md5
  $F2CN -t 600 -m 600 $S/empty $D/empty
  $F2CN -t 600 -n 1 $S/one $D/one
  [ "$(fstat transfers)" -ge 4 ] || { fdiag; exit 1; }
  # zoid's traffic: the file went out as broadcast messages.
  [ "$(awk '$1 == "broadcast" { print $4 }' $Z/traffic)" -ge 3150000 ] ||
    { echo "broadcast bytes sent:"; cat $Z/traffic; exit 1; }
  # The CNs have no such directory: their errno comes back (ENOENT).
  expect_errno 2 $F2CN -t 600 $S/one /tmp/no-such-dir/one | grep -q ": CN [0-9]*: "
  # Requests refused on the ION: relative path, a directory, a non-CN.
  expect_errno 22 $F2CN $S/one relative > /dev/null
  expect_errno 22 $F2CN $S $D/dir > /dev/null
  expect_errno 112 $F2CN -n 4000 $S/one $D/x | grep -q ": CN 4000: "
fi
barrier 862
if [ "$ZOID_ROLE" = cn ]; then
  bad() { echo "CN $ZOID_NODE_ID: $*"; ls -la $D; cat $Z/f2cn; exit 1; }
  perms() { ls -l "$1" | cut -c1-10; }
  (cd $D && md5sum -c data.md5) || bad "data.bin differs"
  [ "$(perms $D/data.bin)" = -rw-r----- ] || bad "data.bin mode $(perms $D/data.bin)"
  [ -f $D/empty ] && [ ! -s $D/empty ] || bad "empty is not an empty file"
  [ "$(perms $D/empty)" = -rw------- ] || bad "empty mode $(perms $D/empty)"
  if [ "$ZOID_NODE_ID" = 1 ]; then
    [ "$(cat $D/one)" = one ] || bad "one: $(cat $D/one)"
  else
    [ ! -e $D/one ] || bad "one reached a CN it was not for"
  fi
  # No temporary file is left behind, here or after the failed transfer.
  ! ls -a $D /tmp | grep 'f2cn-' || bad "temporary files left"
  [ "$(fstat files_received)" -ge 3 ] || bad "too few files"
  # ... received as broadcast, and acknowledged in the same category.
  awk '$1 == "broadcast" && $5 >= 3150000 && $2 >= 1 { ok = 1 } END { exit !ok }' $Z/traffic ||
    { cat $Z/traffic; bad "broadcast traffic not counted"; }
fi
barrier 863

# A CN that is down: the ION refuses a transfer to every CN at once and
# names it.  The last CN drops off the tree for a while, then comes back.
GONE=$ZOID_CNS
OLD_TIMEOUT=$(cat $T/peer_timeout_ms)
echo 4000 > $T/peer_timeout_ms
barrier 864
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = "$GONE" ]; then
  links=$(awk '{ print $1 }' $T/links)
  for l in $links; do echo "$l" > $T/unbind; done
  sleep 15
  for l in $links; do echo "$l" > $T/bind; done
fi
if [ "$ZOID_ROLE" = ion ]; then
  i=0
  until grep -qE "^down( [0-9]+)* $GONE( |$)" $Z/f2cn; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "CN $GONE never listed down"; fdiag; exit 1; }
    sleep 0.1
  done
  t0=$(date +%s)
  expect_errno 112 $F2CN -t 600 $S/one $D/down | grep -q ": CN $GONE: "
  [ $(( $(date +%s) - t0 )) -le 2 ]          # at once, no waiting
  if [ "$ZOID_CNS" -ge 2 ]; then $F2CN -t 600 -n 1 $S/one $D/one-again; fi
  # Back: the CN is no longer listed once treenet sees it again.
  i=0
  while grep -qE "^down( [0-9]+)* $GONE( |$)" $Z/f2cn; do
    i=$((i + 1)); [ $i -lt 900 ] || { echo "CN $GONE never came back"; fdiag; exit 1; }
    sleep 0.1
  done
fi
barrier 865
echo "$OLD_TIMEOUT" > $T/peer_timeout_ms
