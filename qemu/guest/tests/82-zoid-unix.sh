# The unix plug-in: POSIX calls from CN programs run on the ION's export,
# compared with the same calls run locally; confinement, root squash, and
# a FIFO of the export that is never opened for a CN.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZU=/zoid/bin/zoidunix
ZC=/zoid/bin/zoidcall
owner() { ls -ln "$1" | awk '{ print $3 }'; }  # (stat is treenet-lib's counter reader)
zdiag() { nonzero "zoid stats" $Z/stats; }

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p /export && chmod 1777 /export
  for i in $(seq 1 "$ZOID_CNS"); do
    mkdir -m 1777 /export/cn$i
    mkfifo -m 666 /export/cn$i/fifo
  done
  echo "written on the ion" > /export/hello
  ! echo relative/path > $Z/export 2>/dev/null || { echo "should have failed: echo relative/path > \$Z/export"; exit 1; }
  echo /export > $Z/export
  [ "$(cat $Z/export)" = /export ]
  [ "$(cat $Z/root_squash)" = 1 ]
fi
barrier 820
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p /tmp/local
  $ZU compare /tmp/local "$ZOID_NODE" || { zdiag; exit 1; }
  $ZU escape
  [ "$($ZU cat hello)" = "written on the ion" ]
  $ZU creds "$ZOID_NODE/squashed" | grep -q "^uid 65534 gid 65534 "
  # A FIFO of the export is never opened for a CN (its open would hold
  # a worker until a writer came): ENXIO at once, with O_CREAT too.
  out=$($ZU cat "$ZOID_NODE/fifo") && { echo "the FIFO was opened: $out"; exit 1; }
  [ "$out" = "open: -6" ] || { echo "open of the FIFO: $out"; exit 1; }
  out=$($ZU creds "$ZOID_NODE/fifo") && { echo "the FIFO was opened: $out"; exit 1; }
  echo "$out" | grep -q "^open: -6$" || { echo "open of the FIFO with O_CREAT: $out"; exit 1; }
  $ZC null 10
fi
barrier 821
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(owner /export/cn1/squashed)" = 65534 ]
  echo 0 > $Z/root_squash
fi
barrier 822
if [ "$ZOID_ROLE" = cn ]; then
  $ZU creds "$ZOID_NODE/root" | grep -q "^uid 0 gid 0 "
fi
barrier 823
if [ "$ZOID_ROLE" = ion ]; then
  echo 1 > $Z/root_squash
  [ "$(owner /export/cn1/root)" = 0 ]
  # uid/gid mapping: an explicit entry for CN root beats root squash.
  printf 'uid 0 4242\ngid 0 4343 1\n' > $Z/idmap
  grep -qx "uid 0 4242 1" $Z/idmap && grep -qx "gid 0 4343 1" $Z/idmap
  grep -qx "unmapped pass" $Z/idmap
  ! echo "uid 0 1" > $Z/idmap 2>/dev/null || { echo "should have failed: echo 'uid 0 1' > \$Z/idmap"; exit 1; }        # overlaps: refused
  ! echo "uid 1 2 3 4" > $Z/idmap 2>/dev/null || { echo "should have failed: echo 'uid 1 2 3 4' > \$Z/idmap"; exit 1; }    # malformed: refused
  [ "$(grep -c . $Z/idmap)" = 3 ]
fi
barrier 8231
if [ "$ZOID_ROLE" = cn ]; then
  $ZU creds "$ZOID_NODE/mapped" | grep -q "^uid 4242 gid 4343 " || { $ZU creds "$ZOID_NODE/mapped"; exit 1; }
fi
barrier 8232
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(owner /export/cn1/mapped)" = 4242 ]
  echo clear > $Z/idmap
  [ "$(cat $Z/idmap)" = "unmapped pass" ]
  # Descriptors of ended CN processes are closed.
  [ "$(cat $Z/open_files)" = 0 ] || { cat $Z/open_files; exit 1; }
  echo > $Z/export
  [ -z "$(cat $Z/export)" ]
fi
barrier 824
