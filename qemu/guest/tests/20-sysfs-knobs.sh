# treenet's node_id knob: set by init from the harness, writable, and it
# refuses garbage with a clear errno while keeping its value.
[ "$(cat /sys/kernel/treenet/node_id)" = "$ZOID_NODE_ID" ]
# (ids are 16-bit; 65535 means broadcast and is refused)
if (echo 65535 > /sys/kernel/treenet/node_id) 2>/dev/null; then echo "broadcast id accepted"; exit 1; fi
if (echo 4294967296 > /sys/kernel/treenet/node_id) 2>/dev/null; then echo "out of range accepted"; exit 1; fi
if (echo bogus > /sys/kernel/treenet/node_id) 2>/dev/null; then echo "garbage accepted"; exit 1; fi
[ "$(cat /sys/kernel/treenet/node_id)" = "$ZOID_NODE_ID" ]
# read-only files refuse writes
if (echo 1 > /sys/kernel/zoid/version) 2>/dev/null; then echo "version writable"; exit 1; fi
