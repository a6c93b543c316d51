# zoidnet, IP over treenet (docs/zoidnet.md), on every node:
# * zoidnet.ko loads, its files show this node's addresses in the default
#   plan, bad subnet writes are refused (and any write while zn0 is up),
#   zoidnet-up brings zn0 up with its addresses, the CNs' default routes
#   through the ION, the carrier on;
# * each CN pings the ION, CN 1 pings CN 2 (IPv6 too, on a kernel with it);
# * TCP: CN 1 sends MIB MiB (64; 16 under KASAN) through busybox nc to CN 2
#   (to the ION with one CN), a random 1 MiB block repeated behind a
#   numbered line each time, with the stream's md5 in front: the receiver
#   checks it;
# * forged sources (treenet's self-test `raw`, any bytes on zoidnet's
#   channel): CN 1 sends the ION ICMP echo requests, checksums right, in
#   CN 2's name and in the ION's own: the ION counts them spoofed_source
#   and its kernel sees none (Icmp InEchos), while one in CN 1's own name
#   is answered; bytes that are no packet count malformed; with 2 CNs, CN 2
#   refuses one in the ION's name (spoofed_source) and one for the ION's
#   address (not_for_us);
# * rmmod takes zn0, its routes and /sys/kernel/zoidnet away.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoidnet
UP=/zoid/bin/zoidnet-up
DEV=zn0
CNS=${ZOID_CNS:-1}
ME=$ZOID_NODE_ID
zn_diag() {
  nonzero "zoidnet stats" $Z/stats
  echo "--- ip"; ip addr show dev $DEV 2>&1; ip route 2>&1
  echo "--- carrier $(cat /sys/class/net/$DEV/carrier 2>&1)"
}
fail() { echo "$*"; zn_diag; exit 1; }
zstat() { counter $Z/stats "$1"; }
refused() { if (echo "$1" > "$Z/$2") 2> /dev/null; then fail "accepted: '$1' > $2"; fi; }
# addr4 NODE / addr6 NODE: a node's addresses in the default plan.
addr4() { _h=$(($1 + 1)); echo "10.128.$((_h / 256)).$((_h % 256))"; }
addr6() { printf 'fd5a:6f69:6400::%x\n' $(($1 + 1)); }
has_ipv6() { [ -d /proc/sys/net/ipv6 ]; }
# in_echos: ICMP echo requests this node's kernel took in.
in_echos() {
  awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col["InEchos"] }' \
    /proc/net/snmp
}

forward0=$(cat /proc/sys/net/ipv4/ip_forward)
# Whatever happens, zoidnet goes (treenet's unload needs it gone), the
# listener and the ION's forwarding too.
cleanup() {
  kill $listener 2> /dev/null || true
  rmmod zoidnet 2> /dev/null || true
  echo "$forward0" > /proc/sys/net/ipv4/ip_forward
}
listener=
trap cleanup EXIT

insmod /lib/zoid/zoidnet.ko || fail "insmod zoidnet.ko"
[ "$(cat $Z/version)" = "$(cat /zoid/suite-version)" ] || fail "version: $(cat $Z/version)"
[ "$(cat $Z/ifname)" = $DEV ] || fail "ifname: $(cat $Z/ifname)"
[ "$(cat /sys/class/net/$DEV/mtu)" = 65000 ] || fail "MTU $(cat /sys/class/net/$DEV/mtu), want 65000"
[ "$(cat $Z/subnet)" = 10.128.0.0/16 ] || fail "subnet: $(cat $Z/subnet)"
[ "$(cat $Z/subnet6)" = fd5a:6f69:6400::/64 ] || fail "subnet6: $(cat $Z/subnet6)"
[ "$(cat $Z/address)" = "$(addr4 $ME)/16" ] || fail "address: $(cat $Z/address), want $(addr4 $ME)/16"
[ "$(cat $Z/address6)" = "$(addr6 $ME)/64" ] || fail "address6: $(cat $Z/address6)"
if [ "$ZOID_ROLE" = ion ]; then
  [ -z "$(cat $Z/gateway)" ] && [ -z "$(cat $Z/gateway6)" ] || fail "the ION has a gateway: $(cat $Z/gateway)"
else
  # (A CN that just booted may not know its ION yet.)
  has_gateway() { [ -n "$(cat $Z/gateway)" ]; }
  wait_until 60 has_gateway || fail "no gateway: the ION never came up"
  [ "$(cat $Z/gateway)" = "$(addr4 0)" ] || fail "gateway: $(cat $Z/gateway), want $(addr4 0)"
  [ "$(cat $Z/gateway6)" = "$(addr6 0)" ] || fail "gateway6: $(cat $Z/gateway6)"
fi
# Bad plans are refused and change nothing; a good one applies while down.
for bad in 10.128.0.1/16 10.128.0.0/31 10.128.0.0 224.0.0.0/4 127.0.0.0/8 junk ""; do
  refused "$bad" subnet
done
for bad in fd5a:6f69:6400::1/64 fe80::/64 ff02::/16 fd5a::/127 junk 10.0.0.0/8; do
  refused "$bad" subnet6
done
[ "$(cat $Z/subnet)" = 10.128.0.0/16 ] || fail "a refused write changed subnet: $(cat $Z/subnet)"
echo 10.99.0.0/24 > $Z/subnet || fail "a good subnet refused while down"
[ "$(cat $Z/address)" = "10.99.0.$((ME + 1))/24" ] || fail "address in 10.99.0.0/24: $(cat $Z/address)"
echo 10.128.0.0/16 > $Z/subnet
echo fd5a:6f69:6400::/64 > $Z/subnet6

$UP || fail "zoidnet-up"
$UP > /dev/null || fail "zoidnet-up, run again"
wait_until 10 grep -qx 1 /sys/class/net/$DEV/carrier || fail "no carrier"
ip addr show dev $DEV | grep -qF " $(addr4 $ME)/16 " || fail "zn0 lacks $(addr4 $ME)/16"
if [ "$ZOID_ROLE" = cn ]; then
  ip route | grep -q "^default via $(addr4 0) dev $DEV" || fail "no default route via the ION"
else
  [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ] || fail "the ION does not forward"
fi
# Up: the plan stays as it is.
refused 10.129.0.0/16 subnet
refused fd00:1::/64 subnet6
barrier 1180

if [ "$ZOID_ROLE" = cn ]; then
  ping -c 3 -W 5 "$(addr4 0)" > /tmp/zn-ping || { cat /tmp/zn-ping; fail "CN $ME cannot ping the ION"; }
  if has_ipv6; then
    ping6 -c 3 -W 5 "$(addr6 0)" > /tmp/zn-ping || { cat /tmp/zn-ping; fail "no IPv6 ping to the ION"; }
  fi
  if [ "$ME" = 1 ] && [ "$CNS" -ge 2 ]; then
    ping -c 3 -W 5 "$(addr4 2)" > /tmp/zn-ping || { cat /tmp/zn-ping; fail "CN 1 cannot ping CN 2"; }
    if has_ipv6; then
      ping6 -c 3 -W 5 "$(addr6 2)" > /tmp/zn-ping || { cat /tmp/zn-ping; fail "no IPv6 ping to CN 2"; }
    fi
  fi
  [ "$(zstat tx_packets)" -ge 3 ] && [ "$(zstat rx_packets)" -ge 3 ] || fail "pings not counted"
  # The device's count is zoidnet's: read between two reads of zoidnet's
  # (the other CN's pings may be answered meanwhile).
  before=$(zstat tx_packets)
  dev_tx=$(cat /sys/class/net/$DEV/statistics/tx_packets)
  after=$(zstat tx_packets)
  [ "$before" -le "$dev_tx" ] && [ "$dev_tx" -le "$after" ] ||
    fail "the device's tx_packets $dev_tx is not zoidnet's ($before..$after)"
  # zoid-stat shows them in its IP forwarding category.
  /zoid/bin/zoid-stat | grep -q "^ipfwd tx_packets [1-9]" || fail "zoid-stat shows no ipfwd tx_packets"
fi
barrier 1181

# TCP from CN 1 to CN 2 (relayed by the ION's treenet) or to the ION.
MIB=64
[ -z "$KASAN" ] || MIB=16
receiver=0
[ "$CNS" -lt 2 ] || receiver=2
stream() {
  _i=0
  while [ $_i -lt $MIB ]; do echo "block $_i"; cat /tmp/zn-block; _i=$((_i + 1)); done
}
if [ "$ME" = $receiver ]; then
  # The sink: the md5 line the sender put in front, then the stream's md5.
  cat > /tmp/zn-sink <<'EOF'
#!/bin/sh
read -r want
got=$(md5sum | cut -c1-32)
echo "$want $got" > /tmp/zn-tcp.part && mv /tmp/zn-tcp.part /tmp/zn-tcp.result
EOF
  chmod +x /tmp/zn-sink
  rm -f /tmp/zn-tcp.result
  nc -l -p 5001 -e /tmp/zn-sink & listener=$!
  listening() { cat /proc/net/tcp /proc/net/tcp6 2> /dev/null | grep -q ':1389 [0-9A-F:]* 0A '; }
  wait_until 10 listening || fail "nc does not listen on port 5001"
fi
barrier 1182
if [ "$ME" = 1 ]; then
  dd if=/dev/urandom of=/tmp/zn-block bs=1024 count=1024 2> /dev/null
  want=$(stream | md5sum | cut -c1-32)
  t0=$(cut -d' ' -f1 /proc/uptime)
  { echo "$want"; stream; } | timeout 900 nc "$(addr4 $receiver)" 5001 > /dev/null ||
    fail "nc to $(addr4 $receiver) failed"
  echo "$MIB MiB to node $receiver in $(awk -v a="$t0" '{ print $1 - a }' /proc/uptime) s"
  rm -f /tmp/zn-block
fi
barrier 1183
if [ "$ME" = $receiver ]; then
  wait_until 30 [ -s /tmp/zn-tcp.result ] || fail "the sink wrote no result"
  read -r want got < /tmp/zn-tcp.result
  [ -n "$want" ] && [ "$want" = "$got" ] || fail "TCP stream: md5 $got, the sender's $want"
  wait $listener || true
  listener=
fi

# Forgeries, from CN 1 through treenet's self-test.
hex4() { echo "$1" | awk -F. '{ printf "%02x%02x%02x%02x", $1, $2, $3, $4 }'; }
# csum HEX: the Internet checksum of the bytes HEX spells (4 hex digits).
csum() {
  echo "$1" | awk '
    function hex(h,   v, i) {
      v = 0
      for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
      return v
    }
    { s = 0; for (i = 1; i <= length($0); i += 4) s += hex(substr($0, i, 4))
      while (s > 65535) s = int(s / 65536) + s % 65536
      printf "%04x", 65535 - s }'
}
# echo_request SRC DST: an IPv4 ICMP echo request, both checksums right.
echo_request() {
  _src=$(hex4 "$1"); _dst=$(hex4 "$2")
  _ip=45000020000040004001; _data=5a4e00017a6e6574
  echo "$_ip$(csum "${_ip}0000$_src$_dst")$_src${_dst}0800$(csum "08000000$_data")$_data"
}
spoofed0=$(zstat spoofed_source); malformed0=$(zstat malformed)
not_for_us0=$(zstat not_for_us); echos0=$(in_echos)
barrier 1184
if [ "$ME" = 1 ]; then
  victim=$(addr4 2)
  [ "$CNS" -ge 2 ] || victim=192.0.2.7
  st raw 7 0 "$(echo_request "$victim" "$(addr4 0)")" > /dev/null || fail "raw send in $victim's name"
  st raw 7 0 "$(echo_request "$(addr4 0)" "$(addr4 0)")" > /dev/null || fail "raw send in the ION's name"
  st raw 7 0 00 > /dev/null || fail "raw send of one byte"
  st raw 7 0 "$(echo_request "$(addr4 1)" "$(addr4 0)")" > /dev/null || fail "raw send in CN 1's name"
  if [ "$CNS" -ge 2 ]; then
    st raw 7 2 "$(echo_request "$(addr4 0)" "$(addr4 2)")" > /dev/null || fail "raw send to CN 2"
    st raw 7 2 "$(echo_request "$(addr4 1)" "$(addr4 0)")" > /dev/null || fail "raw send to CN 2"
  fi
fi
barrier 1185
if [ "$ZOID_ROLE" = ion ]; then
  counter_reaches $Z/stats spoofed_source $((spoofed0 + 2)) || fail "forged sources not refused"
  counter_reaches $Z/stats malformed $((malformed0 + 1)) || fail "one byte not counted malformed"
  got() { [ "$(in_echos)" -ge $((echos0 + 1)) ]; }
  wait_until 10 got || fail "CN 1's own echo request did not reach the ION's kernel"
  [ "$(in_echos)" = $((echos0 + 1)) ] || fail "the ION's kernel took $(($(in_echos) - echos0)) echo requests, want 1"
  [ "$(zstat spoofed_source)" = $((spoofed0 + 2)) ] || fail "spoofed_source rose by more than 2"
elif [ "$ME" = 2 ]; then
  counter_reaches $Z/stats spoofed_source $((spoofed0 + 1)) || fail "CN 2 took a packet in the ION's name"
  counter_reaches $Z/stats not_for_us $((not_for_us0 + 1)) || fail "CN 2 took a packet for the ION"
  [ "$(in_echos)" = "$echos0" ] || fail "CN 2's kernel took a forged echo request"
fi
barrier 1186

rmmod zoidnet || fail "rmmod zoidnet"
[ ! -e $Z ] || fail "$Z is still there"
[ ! -e /sys/class/net/$DEV ] || fail "$DEV is still there"
! ip route | grep -q " dev $DEV" || fail "routes through $DEV are left: $(ip route)"
barrier 1187
