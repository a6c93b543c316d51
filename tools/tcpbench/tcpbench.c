// SPDX-License-Identifier: GPL-2.0
/*
 * tcpbench: the TCP side of `make bench-treenet` (the same measurements as
 * treenet's /sys/kernel/treenet/selftest, over a TCP connection on the same
 * link).  Built static for the guests by scripts/build-guest-tool.sh.
 *
 *   tcpbench server <port> [<bind-ip>]   serve tput/ping connections, one at
 *                                         a time, until a client sends `quit`
 *   tcpbench tput <ip> <port> <size> <count>
 *       sends <count> messages of <size> bytes back to back (a plain byte
 *       stream); the server answers 1 byte after each complete message.
 *       Time: first send -> last answer received.  Prints
 *       ok op=tput n=<count> bytes=<size*count> ns=<elapsed>
 *   tcpbench ping <ip> <port> <size> <count>
 *       <count> round trips of <size> bytes (the server echoes).  Prints
 *       ok op=ping n=<count> ns=<elapsed> rtt_ns=<elapsed/count>
 *   tcpbench quit <ip> <port>              stop the server
 *
 * Each connection starts with a 16-byte header (magic, op, size, count, all
 * big-endian) so one server serves every test.  Every message carries its
 * sequence number in its first 4 bytes (when size >= 4), checked by the
 * receiving side, so a framing bug fails instead of measuring.  TCP_NODELAY
 * is set on both ends; socket buffers are the kernel's defaults.
 * The client retries connecting for CONNECT_WAIT_S seconds (the server may
 * still be starting on the other VM).  Errors: a message on stderr, exit 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x54435042u /* "TCPB" */
#define OP_TPUT 1u
#define OP_PING 2u
#define OP_QUIT 3u
#define MAX_SIZE (64u << 20)
#define MAX_COUNT 100000000u
#define CONNECT_WAIT_S 30
#define RX_CHUNK (256u << 10) /* server read size in tput */

static const char *prog = "tcpbench";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned long parse_num(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > max)
		die("bad %s '%s' (want 1..%lu)", what, s, max);
	return v;
}

/* Writes all of buf; returns 0, or -1 with errno set (EPIPE on a closed peer). */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes; returns 0, or -1 with errno set (0 = peer closed). */
static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *why(void)
{
	return errno ? strerror(errno) : "connection closed by peer";
}

static void nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY: %s", strerror(errno));
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static struct sockaddr_in make_addr(const char *ip, const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons((uint16_t)parse_num(port, "port", 65535));
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die("bad IPv4 address '%s'", ip);
	return a;
}

/* ---- server ------------------------------------------------------------ */

/*
 * Serves one connection.  Returns 1 if it asked the server to quit.  A broken
 * connection is reported and the server goes on with the next one.  buf
 * holds MAX_SIZE bytes: a whole ping message, or one tput read.
 */
static int serve(int fd, unsigned char *buf)
{
	unsigned char hdr[16];
	uint32_t op, size, count, i;

	if (read_all(fd, hdr, sizeof(hdr))) {
		fprintf(stderr, "%s: server: header: %s\n", prog, why());
		return 0;
	}
	op = get32(hdr + 4);
	size = get32(hdr + 8);
	count = get32(hdr + 12);
	if (get32(hdr) != MAGIC || size > MAX_SIZE || count > MAX_COUNT ||
	    (op != OP_QUIT && (size == 0 || count == 0))) {
		fprintf(stderr, "%s: server: bad header (op %u size %u count %u)\n",
			prog, op, size, count);
		return 0;
	}
	if (op == OP_QUIT) {
		write_all(fd, "q", 1);
		return 1;
	}
	if (op == OP_PING) {
		for (i = 0; i < count; i++) {
			if (read_all(fd, buf, size) || write_all(fd, buf, size)) {
				fprintf(stderr, "%s: server: ping %u/%u: %s\n", prog, i, count, why());
				return 0;
			}
		}
		return 0;
	}
	if (op != OP_TPUT) {
		fprintf(stderr, "%s: server: unknown op %u\n", prog, op);
		return 0;
	}
	/* tput: count bytes; answer 1 byte whenever a message is complete. */
	uint32_t msg = 0, off = 0; /* current message and bytes of it seen */
	while (msg < count) {
		ssize_t n = recv(fd, buf, RX_CHUNK, 0);
		ssize_t p = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			fprintf(stderr, "%s: server: tput message %u/%u: %s\n", prog, msg, count, why());
			return 0;
		}
		while (p < n && msg < count) {
			uint32_t take = size - off;

			if ((ssize_t)take > n - p)
				take = (uint32_t)(n - p);
			/* The sequence number: bytes 0..3 of each message (when whole here). */
			if (off == 0 && size >= 4 && take >= 4 && get32(buf + p) != msg) {
				fprintf(stderr, "%s: server: tput message %u carries number %u\n",
					prog, msg, get32(buf + p));
				return 0;
			}
			off += take;
			p += take;
			if (off == size) {
				if (write_all(fd, "a", 1)) {
					fprintf(stderr, "%s: server: tput answer %u: %s\n", prog, msg, why());
					return 0;
				}
				off = 0;
				msg++;
			}
		}
	}
	return 0;
}

static int server(int argc, char **argv)
{
	struct sockaddr_in a;
	unsigned char *buf;
	int one = 1, lfd;

	if (argc < 3 || argc > 4)
		die("usage: tcpbench server <port> [<bind-ip>]");
	a = make_addr(argc == 4 ? argv[3] : "0.0.0.0", argv[2]);
	buf = malloc(MAX_SIZE > RX_CHUNK ? MAX_SIZE : RX_CHUNK);
	if (!buf)
		die("out of memory");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)))
		die("bind %s:%s: %s", argc == 4 ? argv[3] : "*", argv[2], strerror(errno));
	if (listen(lfd, 4))
		die("listen: %s", strerror(errno));
	for (;;) {
		int fd = accept(lfd, NULL, NULL), quit;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept: %s", strerror(errno));
		}
		nodelay(fd);
		quit = serve(fd, buf);
		close(fd);
		if (quit)
			break;
	}
	close(lfd);
	free(buf);
	return 0;
}

/* ---- client ------------------------------------------------------------ */

/* Connects (retrying while the server is not there yet) and sends the header. */
static int client_open(const char *ip, const char *port, uint32_t op, uint32_t size,
		       uint32_t count)
{
	struct sockaddr_in a = make_addr(ip, port);
	unsigned char hdr[16];
	uint64_t give_up = now_ns() + (uint64_t)CONNECT_WAIT_S * 1000000000u;
	int fd;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			break;
		int err = errno;

		close(fd);
		if ((err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH &&
		     err != ETIMEDOUT && err != EINTR) || now_ns() > give_up)
			die("connect %s:%s: %s", ip, port, strerror(err));
		usleep(100000);
	}
	nodelay(fd);
	put32(hdr, MAGIC);
	put32(hdr + 4, op);
	put32(hdr + 8, size);
	put32(hdr + 12, count);
	if (write_all(fd, hdr, sizeof(hdr)))
		die("send header: %s", why());
	return fd;
}

static int client(int argc, char **argv)
{
	const char *mode = argv[1];
	uint32_t size, count, i, answers = 0;
	unsigned char *buf, *back, ack[4096];
	uint64_t t0, ns;
	int fd;

	if (!strcmp(mode, "quit")) {
		if (argc != 4)
			die("usage: tcpbench quit <ip> <port>");
		fd = client_open(argv[2], argv[3], OP_QUIT, 0, 0);
		if (read_all(fd, ack, 1))
			die("quit: %s", why());
		close(fd);
		return 0;
	}
	if (argc != 6)
		die("usage: tcpbench %s <ip> <port> <size> <count>", mode);
	size = (uint32_t)parse_num(argv[4], "size", MAX_SIZE);
	count = (uint32_t)parse_num(argv[5], "count", MAX_COUNT);
	buf = malloc(size);
	back = malloc(size);
	if (!buf || !back)
		die("out of memory");
	for (i = 0; i < size; i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	fd = client_open(argv[2], argv[3], !strcmp(mode, "tput") ? OP_TPUT : OP_PING,
			 size, count);

	t0 = now_ns();
	for (i = 0; i < count; i++) {
		if (size >= 4)
			put32(buf, i);
		if (write_all(fd, buf, size))
			die("%s: send message %u/%u: %s", mode, i, count, why());
		if (!strcmp(mode, "ping")) {
			if (read_all(fd, back, size))
				die("ping: answer %u/%u: %s", i, count, why());
			if (memcmp(buf, back, size))
				die("ping: answer %u differs from what was sent", i);
			continue;
		}
		/* tput: drain the answers that are there, so neither side blocks. */
		for (;;) {
			ssize_t n = recv(fd, ack, sizeof(ack), MSG_DONTWAIT);

			if (n > 0) {
				answers += (uint32_t)n;
				continue;
			}
			if (n == 0 && answers >= count)
				break;
			if (n == 0)
				die("tput: connection closed by peer after %u answers", answers);
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno != EINTR)
				die("tput: answers: %s", strerror(errno));
		}
	}
	while (!strcmp(mode, "tput") && answers < count) {
		uint32_t want = count - answers;
		ssize_t n = recv(fd, ack, want < sizeof(ack) ? want : sizeof(ack), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("tput: answer %u/%u: %s", answers, count,
			    n ? strerror(errno) : "connection closed by peer");
		answers += (uint32_t)n;
	}
	ns = now_ns() - t0;
	close(fd);

	if (!strcmp(mode, "tput"))
		printf("ok op=tput n=%u bytes=%llu ns=%llu\n", count,
		       (unsigned long long)size * count, (unsigned long long)ns);
	else
		printf("ok op=ping n=%u ns=%llu rtt_ns=%llu\n", count,
		       (unsigned long long)ns, (unsigned long long)(ns / count));
	free(buf);
	free(back);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return server(argc, argv);
	if (argc >= 2 && (!strcmp(argv[1], "tput") || !strcmp(argv[1], "ping") ||
			  !strcmp(argv[1], "quit")))
		return client(argc, argv);
	fprintf(stderr,
		"usage: tcpbench server <port> [<bind-ip>]\n"
		"       tcpbench tput|ping <ip> <port> <size> <count>\n"
		"       tcpbench quit <ip> <port>\n");
	return 2;
}
