// SPDX-License-Identifier: GPL-2.0
/*
 * nicstats: a network device's driver statistics (what `ethtool -S` prints),
 * one "name value" line each, for the benchmarks' counter snapshots
 * (qemu/guest/bench/lib.sh `snap`).  busybox has no ethtool.  virtio-net's
 * include each queue's `kicks`: how often the guest notified the device,
 * which under TCG is an exit to QEMU.
 *
 *   nicstats [ifname]      (default eth0)
 */
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int ethtool(int fd, const char *ifname, void *cmd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = cmd;
	return ioctl(fd, SIOCETHTOOL, &ifr);
}

int main(int argc, char **argv)
{
	const char *ifname = argc > 1 ? argv[1] : "eth0";
	struct ethtool_sset_info *sset;
	struct ethtool_gstrings *names;
	struct ethtool_stats *stats;
	unsigned int n, i;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("nicstats: socket");
		return 1;
	}
	sset = calloc(1, sizeof(*sset) + sizeof(__u32));
	if (!sset)
		return 1;
	sset->cmd = ETHTOOL_GSSET_INFO;
	sset->sset_mask = 1ULL << ETH_SS_STATS;
	if (ethtool(fd, ifname, sset) < 0) {
		perror("nicstats: ETHTOOL_GSSET_INFO");
		return 1;
	}
	n = sset->sset_mask ? sset->data[0] : 0;
	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	stats = calloc(1, sizeof(*stats) + (size_t)n * sizeof(__u64));
	if (!names || !stats)
		return 1;
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_STATS;
	names->len = n;
	stats->cmd = ETHTOOL_GSTATS;
	stats->n_stats = n;
	if (n && (ethtool(fd, ifname, names) < 0 || ethtool(fd, ifname, stats) < 0)) {
		perror("nicstats: ETHTOOL_GSTATS");
		return 1;
	}
	for (i = 0; i < n && i < names->len && i < stats->n_stats; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, names->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = 0;
		printf("%s %llu\n", name, (unsigned long long)stats->data[i]);
	}
	close(fd);
	return 0;
}
