/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zoidbench: `make bench-zoid`'s program.  The same forwarded operations
 * through two forwarders, so the loops being timed are identical:
 *
 *   zoid        /dev/zoid: ztest.null, and the unix plug-in's pread/pwrite
 *               on a file in the ION's export (in-kernel on both ends);
 *   tcp:IP:PORT this program's own server on the ION, a user-space
 *               forwarder over TCP in the role of IBM's CIOD: it receives
 *               each request on a socket, runs pread/pwrite on a file in
 *               its directory and sends the result back.
 *
 *   zoidbench server PORT BIND_IP DIR     the forwarder (one connection at a
 *                                         time, until a client sends quit)
 *   zoidbench null  TRANSPORT COUNT       COUNT null calls
 *   zoidbench write TRANSPORT SIZE COUNT  COUNT pwrites of SIZE bytes
 *   zoidbench read  TRANSPORT SIZE COUNT  COUNT preads of SIZE bytes
 *   zoidbench quit  tcp:IP:PORT
 *
 * Reads and writes go to the file "zoidbench.dat" (the forwarder's DIR, or
 * the root of the zoid export), at offsets cycling through its first
 * 64 MiB; reads follow writes, so they are served from the ION's page
 * cache in both cases.  Every call is checked (return value; the read data
 * carries the offset it came from).  Output, one line:
 *   ok op=<null|write|read> n=<count> bytes=<size*count> ns=<elapsed> rtt_ns=<elapsed/count>
 *
 * Forwarder wire format (big-endian): request {u32 op, u32 size, u64 off}
 * then, for a write, size bytes; answer {i64 ret} then, for a read, ret
 * bytes.  TCP_NODELAY on both ends.  Errors: a message, exit 1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "zoid.h"

#define OP_NULL 1u
#define OP_WRITE 2u
#define OP_READ 3u
#define OP_QUIT 4u
#define MAX_SIZE (4u << 20)
#define SPAN (64ull << 20)
#define FILE_NAME "zoidbench.dat"
#define CONNECT_WAIT_S 30

static void die(const char *fmt, const char *what, long v)
{
	printf("zoidbench: ");
	printf(fmt, what, v);
	printf("\n");
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("%s: out of memory (%ld)", "malloc", (long)n);
	return p;
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, v >> 32);
	be32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Whole reads and writes on a socket; 0 or -1. */
static int io_all(int fd, void *buf, size_t n, int writing)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The pattern of a buffer written at @off: its offset in every 8 bytes. */
static void fill(uint8_t *buf, uint32_t size, uint64_t off)
{
	for (uint32_t i = 0; i + 8 <= size; i += 8)
		be64(buf + i, off + i);
}

static int check(const uint8_t *buf, uint32_t size, uint64_t off)
{
	for (uint32_t i = 0; i + 8 <= size; i += 8)
		if (get64(buf + i) != off + i)
			return -1;
	return 0;
}

/* ------------------------------------------------------------ forwarder */

static int serve(int c, int file)
{
	uint8_t h[16], ans[8];
	uint8_t *buf = xmalloc(MAX_SIZE);

	for (;;) {
		uint32_t op, size;
		uint64_t off;
		int64_t ret = 0;

		if (io_all(c, h, sizeof(h), 0))
			break;
		op = get32(h);
		size = get32(h + 4);
		off = get64(h + 8);
		if (op == OP_QUIT) {
			free(buf);
			return 1;
		}
		if (size > MAX_SIZE)
			break;
		if (op == OP_WRITE) {
			if (io_all(c, buf, size, 0))
				break;
			ret = pwrite(file, buf, size, (off_t)off);
		} else if (op == OP_READ) {
			ret = pread(file, buf, size, (off_t)off);
		} else if (op != OP_NULL) {
			break;
		}
		if (ret < 0)
			ret = -errno;
		be64(ans, (uint64_t)ret);
		if (io_all(c, ans, sizeof(ans), 1))
			break;
		if (op == OP_READ && ret > 0 && io_all(c, buf, (size_t)ret, 1))
			break;
	}
	free(buf);
	return 0;
}

static int server(const char *port, const char *ip, const char *dir)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int one = 1, s, file;
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, FILE_NAME);
	file = open(path, O_RDWR | O_CREAT, 0644);
	if (file < 0)
		die("%s: cannot open (%ld)", path, errno);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die("%s: bad address%.0ld", ip, 0);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 4))
		die("%s: cannot listen (%ld)", ip, errno);
	for (;;) {
		int c = accept(s, NULL, NULL), quit;

		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		quit = serve(c, file);
		close(c);
		if (quit)
			return 0;
	}
}

/* ------------------------------------------------------------ transports */

struct transport {
	int fd;		/* socket, or /dev/zoid */
	int tcp;
	int remote_fd;	/* zoid: the unix plug-in's descriptor */
	uint8_t *args, *reply;
};

static struct transport connect_to(const char *spec)
{
	struct transport t = { -1, 0, -1, NULL, NULL };

	t.args = xmalloc(MAX_SIZE + 4096);
	t.reply = xmalloc(MAX_SIZE + 4096);
	if (!strncmp(spec, "tcp:", 4)) {
		char ip[64];
		const char *colon = strrchr(spec + 4, ':');
		struct sockaddr_in a = { .sin_family = AF_INET };
		int one = 1;
		uint64_t until = now_ns() + CONNECT_WAIT_S * 1000000000ull;

		if (!colon || (size_t)(colon - spec - 4) >= sizeof(ip))
			die("%s: want tcp:IP:PORT%.0ld", spec, 0);
		memcpy(ip, spec + 4, (size_t)(colon - spec - 4));
		ip[colon - spec - 4] = 0;
		a.sin_port = htons((uint16_t)atoi(colon + 1));
		if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
			die("%s: bad address%.0ld", ip, 0);
		for (;;) {
			t.fd = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(t.fd, (struct sockaddr *)&a, sizeof(a)))
				break;
			close(t.fd);
			if (now_ns() > until)
				die("%s: cannot connect (%ld)", spec, errno);
			usleep(200000);
		}
		setsockopt(t.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t.tcp = 1;
		return t;
	}
	if (strcmp(spec, "zoid"))
		die("%s: transport is zoid or tcp:IP:PORT%.0ld", spec, 0);
	t.fd = open("/dev/zoid", O_RDWR);
	if (t.fd < 0)
		die("%s: cannot open /dev/zoid (%ld)", spec, errno);
	return t;
}

/* One call; returns the operation's result (negative: -errno). */
static int64_t call(struct transport *t, uint32_t op, uint8_t *buf, uint32_t size, uint64_t off)
{
	struct zbuf a = { t->args, 0, MAX_SIZE + 4096, 0 };
	struct zbuf r = { t->reply, 0, MAX_SIZE + 4096, 0 };
	int64_t ret;
	int err;

	if (t->tcp) {
		uint8_t h[16], ans[8];

		be32(h, op);
		be32(h + 4, size);
		be64(h + 8, off);
		if (op == OP_QUIT)
			return io_all(t->fd, h, sizeof(h), 1);
		if (io_all(t->fd, h, sizeof(h), 1) ||
		    (op == OP_WRITE && io_all(t->fd, buf, size, 1)) ||
		    io_all(t->fd, ans, sizeof(ans), 0))
			die("%s: connection lost (%ld)", "tcp", errno);
		ret = (int64_t)get64(ans);
		if (op == OP_READ && ret > 0 && io_all(t->fd, buf, (size_t)ret, 0))
			die("%s: connection lost (%ld)", "tcp", errno);
		return ret;
	}
	switch (op) {
	case OP_NULL:
		err = zoid_call(t->fd, ZTEST_ID, ZTEST_NULL, &a, &r);
		break;
	case OP_WRITE:
		zput_u32(&a, (uint32_t)t->remote_fd);
		zput_bytes(&a, buf, size);
		zput_u64(&a, off);
		err = zoid_call(t->fd, UNIX_ID, UNIX_PWRITE, &a, &r);
		break;
	default:
		zput_u32(&a, (uint32_t)t->remote_fd);
		zput_u32(&a, size);
		zput_u64(&a, off);
		err = zoid_call(t->fd, UNIX_ID, UNIX_PREAD, &a, &r);
		break;
	}
	if (err)
		return err;
	ret = (int64_t)zget_u64(&r);
	if (op == OP_READ && ret > 0) {
		uint32_t n = zget_u32(&r);
		const uint8_t *p = zget(&r, n);

		if (!p || n != (uint64_t)ret)
			die("%s: malformed pread reply (%ld)", "zoid", (long)n);
		memcpy(buf, p, n);
	}
	return r.err ? -r.err : ret;
}

/* zoid: opens the file in the export root through the unix plug-in. */
static void zoid_open(struct transport *t)
{
	struct zbuf a = { t->args, 0, 4096, 0 }, r = { t->reply, 0, 4096, 0 };
	int err;

	zput_bytes(&a, "/" FILE_NAME, sizeof(FILE_NAME));
	zput_u32(&a, zoid_oflags(O_RDWR | O_CREAT));
	zput_u32(&a, 0644);
	err = zoid_call(t->fd, UNIX_ID, UNIX_OPEN, &a, &r);
	if (err)
		die("%s: open in the export failed (%ld)", "zoid", -err);
	t->remote_fd = (int)zget_u64(&r);
	if (t->remote_fd < 0)
		die("%s: open in the export failed (%ld)", "zoid", -t->remote_fd);
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	struct transport t;
	uint32_t size = 0, o = OP_NULL;
	uint64_t count, start, ns, off = 0;
	uint8_t *buf;

	if (!strcmp(op, "server") && argc == 5)
		return server(argv[2], argv[3], argv[4]);
	if (!strcmp(op, "quit") && argc == 3) {
		t = connect_to(argv[2]);
		call(&t, OP_QUIT, NULL, 0, 0);
		return 0;
	}
	if (!strcmp(op, "null") && argc == 4) {
		count = strtoull(argv[3], NULL, 10);
	} else if ((!strcmp(op, "write") || !strcmp(op, "read")) && argc == 5) {
		o = !strcmp(op, "write") ? OP_WRITE : OP_READ;
		size = (uint32_t)strtoul(argv[3], NULL, 10);
		count = strtoull(argv[4], NULL, 10);
		if (size < 8 || size > MAX_SIZE || size % 8)
			die("%s: size must be a multiple of 8 up to 4 MiB (%ld)", op, (long)size);
	} else {
		fprintf(stderr, "usage: zoidbench server PORT IP DIR | null T N | write|read T SIZE N | quit T\n");
		return 2;
	}
	t = connect_to(argv[2]);
	if (!t.tcp && o != OP_NULL)
		zoid_open(&t);
	buf = xmalloc(size);
	start = now_ns();
	for (uint64_t i = 0; i < count; i++) {
		int64_t ret;

		if (o == OP_WRITE)
			fill(buf, size, off);
		ret = call(&t, o, buf, size, off);
		if (ret != (o == OP_NULL ? 0 : (int64_t)size))
			die("%s: call returned %ld", op, (long)ret);
		if (o == OP_READ && check(buf, size, off))
			die("%s: wrong data at offset %ld", op, (long)off);
		if (size)
			off = (off + size) % (SPAN - SPAN % size);
	}
	ns = now_ns() - start;
	printf("ok op=%s n=%llu bytes=%llu ns=%llu rtt_ns=%llu\n", op, (unsigned long long)count,
	       (unsigned long long)size * count, (unsigned long long)ns,
	       (unsigned long long)(count ? ns / count : 0));
	return 0;
}
