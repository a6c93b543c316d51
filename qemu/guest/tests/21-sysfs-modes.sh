# Unprivileged users cannot change zoid's knobs (issue 8): every file
# under /sys/kernel/{treenet,zoid,zoidfs,ssi} is writable by root alone,
# secrets (treenet's auth_key) are root's alone, and a write as nobody is
# refused with the knob unchanged.
cp /etc/passwd /tmp/passwd.21
grep -q '^nobody:' /etc/passwd || echo "nobody:x:65534:65534:nobody:/:/bin/sh" >> /etc/passwd
n=0
for d in /sys/kernel/treenet /sys/kernel/zoid /sys/kernel/zoidfs /sys/kernel/ssi; do
  [ -d $d ] || continue
  for f in $(find $d -type f); do
    case $(stat -c %a "$f") in
      644|444|600|400) n=$((n + 1)) ;;
      *) echo "$f: mode $(stat -c %a "$f")"; exit 1 ;;
    esac
  done
done
[ "$(stat -c %a /sys/kernel/treenet/auth_key)" = 600 ] || { echo "auth_key is not 0600"; exit 1; }
as_nobody() { su -s /bin/sh nobody -c "$1" 2>/dev/null; }
# The harness's own sanity: nobody is not root, and may read a knob.
[ "$(as_nobody 'id -u')" = 65534 ] || { echo "su to nobody does not work here"; exit 1; }
w=$(cat /sys/kernel/treenet/window)
[ "$(as_nobody 'cat /sys/kernel/treenet/window')" = "$w" ] || { echo "nobody cannot read a knob"; exit 1; }
for knob in treenet/window treenet/drop_ppm treenet/bind zoid/workers; do
  [ -e /sys/kernel/$knob ] || continue
  before=$(cat /sys/kernel/$knob 2>/dev/null || true)
  if as_nobody "echo 1 > /sys/kernel/$knob"; then echo "nobody wrote $knob"; exit 1; fi
  [ "$(cat /sys/kernel/$knob 2>/dev/null || true)" = "$before" ] || { echo "$knob changed"; exit 1; }
done
if as_nobody 'cat /sys/kernel/treenet/auth_key'; then echo "nobody read auth_key"; exit 1; fi
cp /tmp/passwd.21 /etc/passwd
echo "$n files, none writable but by root; nobody's writes refused"
