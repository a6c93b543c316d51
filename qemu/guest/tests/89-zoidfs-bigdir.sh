# A directory of 100k entries listed through zoidfs from every CN: every
# name exactly once, in batches that resume at the ION's cookies, twice
# over with the same result, and a seekdir to a cookie halfway resumes
# exactly there.  Under KASAN (x86_64 debug, emulated) 20k entries, about
# 90 batches a listing: 100k took 3.5 minutes of `make check` there, and
# the ppc32 pset lists 100k in seconds.  BIGDIR_ENTRIES overrides.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
X=/zfs-bigdir-export
M=/mnt/zfs-bigdir
N=100000
[ -z "$KASAN" ] || N=20000
N=${BIGDIR_ENTRIES:-$N}
if [ "$ZOID_ROLE" = ion ]; then
  # Its own tmpfs: rootfs has too few inodes for 100k entries.
  mkdir -p $X && mount -t tmpfs -o nr_inodes=$((N + 1000)),size=32m zfs-bigdir $X
  mkdir $X/big
  t0=$(date +%s)
  /zoid/bin/zfsx -m $X/big entry- $N
  echo "ION: $N entries made in $(( $(date +%s) - t0 )) s" 
  echo $X > $Z/export
  echo "ION: $(free -m | awk '$1 == "Mem:" { print $3 }') MiB used with $N entries"
fi
barrier 940
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  mount -t zoidfs zoidfs $M
  seq 1 $N | sed 's/^/entry-/' | sort > /tmp/zfs-names
  t0=$(date +%s)
  before=$(counter /sys/kernel/zoidfs/stats readdir)
  # zfsx -d lists without a stat per name and checks seekdir to a cookie.
  /zoid/bin/zfsx -d $M/big > /tmp/zfs-raw
  sort /tmp/zfs-raw > /tmp/zfs-listed
  cmp /tmp/zfs-names /tmp/zfs-listed || { wc -l /tmp/zfs-listed; exit 1; }
  echo "$(free -m | awk '$1 == "Mem:" { print $3 }') MiB used on cn$ZOID_NODE_ID" 
  /zoid/bin/zfsx -d $M/big > /tmp/zfs-raw2
  cmp /tmp/zfs-raw /tmp/zfs-raw2      # the same order both times
  calls=$(( $(counter /sys/kernel/zoidfs/stats readdir) - before ))
  echo "$N entries listed twice in $calls readdir calls, $(( $(date +%s) - t0 )) s"
  umount $M
fi
barrier 941
if [ "$ZOID_ROLE" = ion ]; then
  echo > $Z/export
  umount $X && rmdir $X
fi
barrier 942
