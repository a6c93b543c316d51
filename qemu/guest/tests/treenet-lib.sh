# Helpers for the treenet tests (sourced).
T=/sys/kernel/treenet

# st <command...>: runs a selftest command, prints its result line.
st() {
  echo "$*" > $T/selftest || { echo "selftest '$*' failed: $(cat $T/selftest)"; return 1; }
  cat $T/selftest
}

# stat <name>: one counter.
stat() { awk -v n="$1" '$1 == n { print $2 }' $T/stats; }

# barrier <tag>: every node of the pset meets here.
barrier() { st barrier "$1" "$ZOID_CNS" > /dev/null; }

# The message sizes moved both ways: 1 byte .. 4 MiB.
SIZES="1 100 224 225 240 1000 1484 4096 65536 1048576 4194304"
