/* SPDX-License-Identifier: GPL-2.0 */
/*
 * f2cn: copy a file from this ION to the same path on every CN of its pset,
 * over treenet broadcast (ZOID's file broadcast; the kernel side is
 * drivers/zoid/f2cn.rs).
 *
 *   f2cn [-n NODE[,NODE...]] [-m MODE] [-t SECONDS] SRC [DEST]
 *
 *   -n  only these CNs (default: every CN of the pset; a CN that is down
 *       makes the transfer fail at once, naming it)
 *   -m  permission bits on the CNs, octal (default: SRC's)
 *   -t  how long to wait for the CNs' answers at each step (default: zoid's
 *       timeout_ms knob)
 *   DEST defaults to SRC's absolute path.
 *
 * A CN gets the whole file or keeps what it had: the kernel writes a
 * temporary file next to DEST and renames it into place once every chunk
 * arrived and the digest matched.  Exit 0 on success; on failure the CN
 * that failed (if any) and the errno are printed and the status is 1.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zoid.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: f2cn [-n NODE[,NODE...]] [-m MODE] [-t SECONDS] SRC [DEST]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct zoid_ioc_f2cn r = { .mode = ZOID_F2CN_MODE_KEEP, .failed_node = 0xffff };
	uint16_t nodes[4096];
	char abs_src[PATH_MAX];
	const char *src, *dest;
	double t0;
	int opt, fd, zfd;

	while ((opt = getopt(argc, argv, "n:m:t:")) != -1) {
		char *p, *end;

		switch (opt) {
		case 'n':
			for (p = optarg; *p; p = end + (*end == ',')) {
				unsigned long n = strtoul(p, &end, 10);

				if (end == p || n > 0xfffe || r.nnodes == 4096)
					return usage();
				nodes[r.nnodes++] = (uint16_t)n;
			}
			r.nodes = (uint64_t)(uintptr_t)nodes;
			break;
		case 'm':
			r.mode = (uint32_t)strtoul(optarg, &end, 8);
			if (*end || r.mode > 07777)
				return usage();
			break;
		case 't':
			r.timeout_ms = (uint32_t)(strtoul(optarg, &end, 10) * 1000);
			if (*end)
				return usage();
			break;
		default:
			return usage();
		}
	}
	if (optind >= argc || argc - optind > 2)
		return usage();
	src = argv[optind];
	dest = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (!dest) {
		if (!realpath(src, abs_src)) {
			printf("f2cn: %s: %s (%d)\n", src, strerror(errno), errno);
			return 1;
		}
		dest = abs_src;
	}
	fd = open(src, O_RDONLY);
	if (fd < 0) {
		printf("f2cn: %s: %s (%d)\n", src, strerror(errno), errno);
		return 1;
	}
	zfd = open("/dev/zoid", O_RDWR);
	if (zfd < 0) {
		printf("f2cn: /dev/zoid: %s (%d)\n", strerror(errno), errno);
		return 1;
	}
	r.fd = fd;
	r.path = (uint64_t)(uintptr_t)dest;
	t0 = now_s();
	if (ioctl(zfd, ZOID_IOC_F2CN, &r) < 0) {
		int err = errno;

		if (r.failed_node != 0xffff)
			printf("f2cn: %s -> %s: CN %u: %s (%d)\n", src, dest, r.failed_node,
			       strerror(err), err);
		else
			printf("f2cn: %s -> %s: %s (%d)\n", src, dest, strerror(err), err);
		return 1;
	}
	t0 = now_s() - t0;
	printf("f2cn: %s -> %s: %llu bytes to %u CNs in %.2f s (%.1f MB/s)\n", src, dest,
	       (unsigned long long)r.bytes, r.cns, t0, t0 > 0 ? r.bytes / t0 / 1e6 : 0.0);
	return 0;
}
