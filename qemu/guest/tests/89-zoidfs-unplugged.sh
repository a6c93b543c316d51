# A cut link, restored (issue 8): CN 1 takes its tree links down twice
# while it writes a file through a hard mount: once for less than
# peer_timeout_ms (treenet retransmits, nobody notices) and once for
# longer (both ends declare the other down; the CN attaches again and its
# hard calls are sent again).  Every byte arrives once, in place (checked
# through the ION's copy), and the other CNs keep working meanwhile.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
X=/zfs-cut-export
H=/mnt/zfs-cut
CHUNKS=60
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
  downs0=$(stat peer_down)
fi
barrier 991
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $H
  mount -t zoidfs -o hard,timeo=20,retrans=0 zoidfs $H
  dd if=/dev/urandom of=/tmp/cut-src bs=65536 count=$CHUNKS 2>/dev/null
  # Paced 64 KiB writes at fixed offsets (a write sent again lands where
  # the first did).
  (
    i=0
    while [ $i -lt $CHUNKS ]; do
      dd if=/tmp/cut-src of=$H/cut-cn$ZOID_NODE_ID bs=65536 skip=$i seek=$i count=1 \
        conv=notrunc 2>/tmp/cut-dd.err || { echo "chunk $i:"; cat /tmp/cut-dd.err; exit 1; }
      i=$((i + 1))
      sleep 0.1
    done
  ) > /tmp/cut-writer.out 2>&1 &
  writer=$!
  if [ "$ZOID_NODE_ID" = 1 ]; then
    links=$(ls /sys/class/net | grep -v '^lo$')
    cut() { for l in $links; do ip link set "$l" "$1"; done; }
    downs0=$(stat peer_down)
    sleep 1
    cut down; sleep 1; cut up
    echo "short cut (1 s): peer_down $(( $(stat peer_down) - downs0 ))"
    [ "$(stat peer_down)" = "$downs0" ] || { echo "a 1 s cut took the ION for dead"; diag; exit 1; }
    sleep 1
    ms=$(cat $T/peer_timeout_ms)
    cut down; sleep $(( ms / 1000 + 3 )); cut up
    i=0
    until [ "$(stat peer_down)" -gt "$downs0" ]; do
      i=$((i + 1)); [ $i -le 50 ] || { echo "no peer down after a long cut"; diag; exit 1; }
      sleep 0.1
    done
    echo "long cut ($(( ms / 1000 + 3 )) s, peer_timeout_ms=$ms): the ION went down and came back"
  fi
  wait $writer || { cat /tmp/cut-writer.out; exit 1; }
  cmp /tmp/cut-src $H/cut-cn$ZOID_NODE_ID || { echo "the ION's copy differs"; exit 1; }
  echo "zoid client: $(awk '$1 == "resent" || $1 == "replies_stale"' $Z/stats | tr '\n' ' ')"
  umount $H
fi
barrier 992
if [ "$ZOID_ROLE" = ion ]; then
  size=$((CHUNKS * 65536))
  for i in $(seq 1 "$ZOID_CNS"); do
    [ "$(wc -c < $X/cut-cn$i)" = $size ] || { ls -l $X; exit 1; }
  done
  echo "ION: peer_down $(( $(stat peer_down) - downs0 )) during the cuts"
  echo > $Z/export
  rm -rf $X
fi
barrier 993
