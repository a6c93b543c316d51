// SPDX-License-Identifier: GPL-2.0
/*
 * zoidcall: forwarded calls from the command line through /dev/zoid.
 *
 *   zoidcall info                  attach; print the ION and its limits
 *   zoidcall null COUNT            COUNT null calls; prints the mean in µs
 *   zoidcall echo SIZE [COUNT]     echo SIZE bytes, verified; prints MB/s
 *                                  (a failed call prints how long it took)
 *   zoidcall fill SIZE BYTE        ask for SIZE bytes of BYTE, verified
 *   zoidcall sleep MS              a call that blocks MS ms on the ION
 *   zoidcall add A B               prints A+B computed on the ION
 *   zoidcall upper TEXT            TEXT upper-cased by the `sample` plug-in
 *                                  (zoid_sample.ko, loaded on the ION)
 *   zoidcall meet KEY [sample]     waits for a second `meet KEY` (any CN);
 *                                  prints the partner's node id (the ION
 *                                  answers the first call later: a deferred
 *                                  reply, holding no worker meanwhile);
 *                                  with `sample`, through the plug-in in
 *                                  its own module (the plug-in ABI's
 *                                  deferred replies)
 *   zoidcall job hold ID EXEC ARGS GLOBAL_SIZE LOCAL_SIZE MODE SECONDS
 *                                  register a job's start on the ION, wait,
 *                                  register its end (a job belongs to the
 *                                  process that started it: if it dies, the
 *                                  ION ends its part)
 *   zoidcall job start|end ...     one of the two calls (start: the same
 *                                  arguments without SECONDS)
 *
 * Exit status 0 on success; on failure the errno name is printed and the
 * status is 1 (so tests can expect E2BIG and friends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zoid.h"

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int fail(const char *what, int err)
{
	printf("zoidcall: %s: %s (%d)\n", what, strerror(err < 0 ? -err : err), err < 0 ? -err : err);
	return 1;
}

/* A failed call, with how long the call itself took (not the process). */
static int fail_after(const char *what, int err, double t0)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "%s: after %.0f ms", what, (now_us() - t0) / 1e3);
	return fail(buf, err);
}

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p) {
		perror("malloc");
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zoid", O_RDWR);
	const char *cmd = argc > 1 ? argv[1] : "info";

	if (fd < 0)
		return fail("/dev/zoid", errno);
	if (!strcmp(cmd, "info")) {
		struct zoid_ioc_info i = { 0 };

		if (ioctl(fd, ZOID_IOC_INFO, &i) < 0)
			return fail("info", errno);
		if (!i.attached)
			return fail("info: not attached", ENOTCONN);
		printf("ion %u max_request %u max_reply %u workers %u max_outstanding %u\n",
		       i.ion, i.max_request, i.max_reply, i.workers, i.max_outstanding);
		return 0;
	}
	if (!strcmp(cmd, "upper")) {
		const char *text = argc > 2 ? argv[2] : "";
		uint32_t len = (uint32_t)strlen(text), n;
		uint8_t *a = xmalloc(len + 16), *r = xmalloc(len + 32);
		struct zbuf args = { a, 0, len + 16, 0 }, reply = { r, 0, len + 32, 0 };
		int64_t ret;
		int err;

		zput_bytes(&args, text, len);
		zput_u32(&args, len);
		err = zoid_call(fd, SAMPLE_ID, SAMPLE_UPPER, &args, &reply);
		if (err)
			return fail(cmd, err);
		ret = (int64_t)zget_u64(&reply);
		n = zget_u32(&reply);
		printf("upper %.*s ret %lld\n", (int)n, (const char *)zget(&reply, n), (long long)ret);
		return reply.err ? fail("reply", EBADMSG) : 0;
	}
	if (!strcmp(cmd, "meet")) {
		uint8_t a[8], r[16];
		struct zbuf args = { a, 0, sizeof(a), 0 }, reply = { r, 0, sizeof(r), 0 };
		int sample = argc > 3 && !strcmp(argv[3], "sample");
		int err;

		zput_u32(&args, argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 0);
		err = zoid_call(fd, sample ? SAMPLE_ID : ZTEST_ID,
				sample ? SAMPLE_MEET : ZTEST_RENDEZVOUS, &args, &reply);
		if (err)
			return fail(cmd, err);
		printf("meet partner %lld\n", (long long)(int64_t)zget_u64(&reply));
		return 0;
	}
	if (!strcmp(cmd, "null") || !strcmp(cmd, "sleep") || !strcmp(cmd, "add")) {
		long count = !strcmp(cmd, "null") && argc > 2 ? atol(argv[2]) : 1;
		uint8_t a[64], r[64];
		struct zbuf args = { a, 0, sizeof(a), 0 }, reply;
		uint16_t fn = ZTEST_NULL;
		double t0;
		int err = 0;

		if (!strcmp(cmd, "sleep")) {
			fn = ZTEST_SLEEP_MS;
			zput_u32(&args, argc > 2 ? atoi(argv[2]) : 1000);
		} else if (!strcmp(cmd, "add")) {
			fn = ZTEST_ADD;
			zput_u64(&args, argc > 2 ? atoll(argv[2]) : 0);
			zput_u64(&args, argc > 3 ? atoll(argv[3]) : 0);
		}
		t0 = now_us();
		for (long i = 0; i < count && !err; i++) {
			reply = (struct zbuf){ r, 0, sizeof(r), 0 };
			err = zoid_call(fd, ZTEST_ID, fn, &args, &reply);
		}
		if (err)
			return fail(cmd, err);
		if (fn == ZTEST_ADD) {
			int64_t ret = (int64_t)zget_u64(&reply);
			int64_t sum = (int64_t)zget_u64(&reply);

			printf("add %lld ret %lld\n", (long long)sum, (long long)ret);
		} else {
			printf("%s %ld calls mean_us %.1f\n", cmd, count, (now_us() - t0) / count);
		}
		return 0;
	}
	if (!strcmp(cmd, "echo") || !strcmp(cmd, "fill")) {
		size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 4096;
		long count = !strcmp(cmd, "echo") && argc > 3 ? atol(argv[3]) : 1;
		int byte = !strcmp(cmd, "fill") && argc > 3 ? atoi(argv[3]) : 0;
		uint8_t *a = xmalloc(size + 64), *r = xmalloc(size + 64), *data = xmalloc(size);
		struct zbuf args = { a, 0, size + 64, 0 }, reply;
		double t0;

		for (size_t i = 0; i < size; i++)
			data[i] = (uint8_t)(i * 7 + 3);
		if (!strcmp(cmd, "echo")) {
			zput_bytes(&args, data, (uint32_t)size);
			zput_u32(&args, (uint32_t)size);
		} else {
			zput_u8(&args, (uint8_t)byte);
			zput_u32(&args, (uint32_t)size);
			memset(data, byte, size);
		}
		t0 = now_us();
		for (long i = 0; i < count; i++) {
			const uint8_t *got;
			uint32_t n;
			double t1 = now_us();
			int err;

			reply = (struct zbuf){ r, 0, size + 64, 0 };
			err = zoid_call(fd, ZTEST_ID, !strcmp(cmd, "echo") ? ZTEST_ECHO : ZTEST_FILL,
					&args, &reply);
			if (err)
				return fail_after(cmd, err, t1);
			zget_u64(&reply);
			n = zget_u32(&reply);
			got = zget(&reply, n);
			if (reply.err || n != size || memcmp(got, data, size))
				return fail("reply differs", EBADMSG);
		}
		printf("%s %zu bytes x %ld verified MBps %.1f\n", cmd, size, count,
		       (double)size * count / (now_us() - t0));
		return 0;
	}
	if (!strcmp(cmd, "job") && argc >= 4) {
		uint8_t a[4096], r[64];
		struct zbuf args = { a, 0, sizeof(a), 0 }, reply = { r, 0, sizeof(r), 0 };
		int hold = !strcmp(argv[2], "hold");
		int start = hold || !strcmp(argv[2], "start"), err;

		if (start && argc != 9 + hold) {
			fprintf(stderr, "usage: zoidcall job start|hold ID EXEC ARGS GLOBAL_SIZE LOCAL_SIZE MODE [SECONDS]\n");
			return 2;
		}
		zput_u32(&args, (uint32_t)strtoul(argv[3], NULL, 0));
		if (start) {
			zput_bytes(&args, argv[4], (uint32_t)strlen(argv[4]));
			zput_bytes(&args, argv[5], (uint32_t)strlen(argv[5]));
			zput_u32(&args, (uint32_t)strtoul(argv[6], NULL, 0));
			zput_u32(&args, (uint32_t)strtoul(argv[7], NULL, 0));
			zput_bytes(&args, argv[8], (uint32_t)strlen(argv[8]));
		}
		err = zoid_call(fd, JOB_ID, start ? JOB_START : JOB_END, &args, &reply);
		if (err)
			return fail(argv[2], err);
		printf("job %s %s members %lld\n", argv[3], start ? "started" : "ended",
		       (long long)(int64_t)zget_u64(&reply));
		if (!hold)
			return 0;
		fflush(stdout);
		sleep((unsigned int)atoi(argv[9]));
		args = (struct zbuf){ a, 0, sizeof(a), 0 };
		reply = (struct zbuf){ r, 0, sizeof(r), 0 };
		zput_u32(&args, (uint32_t)strtoul(argv[3], NULL, 0));
		err = zoid_call(fd, JOB_ID, JOB_END, &args, &reply);
		if (err)
			return fail("end", err);
		printf("job %s ended members %lld\n", argv[3], (long long)(int64_t)zget_u64(&reply));
		return 0;
	}
	fprintf(stderr, "usage: zoidcall info|null N|echo SIZE [N]|fill SIZE BYTE|sleep MS|add A B|job start|end ...\n");
	return 2;
}
