// SPDX-License-Identifier: GPL-2.0
/*
 * tnflood: hostile input for treenet, from a guest.
 *
 *   tnflood IFACE FRAMES [SEED [CAPTURE_MS [HIJACK_NODE]]]
 *
 * Listens on IFACE for CAPTURE_MS (default 3000) and keeps up to 64 valid
 * treenet frames (version 1, good crc32c; or authenticated, whole) as
 * templates (version 2 frames, XXH64-checksummed, as well), then sends FRAMES
 * frames with treenet's ethertype (0x88b5) on IFACE, each one of:
 *
 *   junk       random bytes of a random length (14..1514 on the wire);
 *   truncated  a header announcing more payload than the frame has;
 *   oversized  a header announcing a payload over any node's limit;
 *   forged     a well-formed header (random kind, flags, nodes, seq) and
 *              payload, checksum right: the parser passes it on;
 *   msghdr     a well-formed first data frame whose message header is
 *              random (channel, length up to 4 GiB, origin, destination);
 *   replay     a captured frame, unchanged (a duplicate);
 *   flipped    a captured frame with 1..3 bits flipped (bad checksum);
 *   mutated    a captured frame with one field or payload byte changed,
 *              checksum fixed (deep paths: windows, reassembly, hellos);
 *   hijack     (with HIJACK_NODE) a captured hello (the neighbour's: a
 *              packet socket sees incoming frames only) whose sender is
 *              made HIJACK_NODE, checksum fixed: another node's id claimed
 *              on this link, which must not take that node's session over.
 *
 * Frames go to the MAC captured frames came from (the neighbour), else to
 * the broadcast address.  Deterministic for a seed.  Prints one line:
 * the counts per kind, send errors, and the rate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETHERTYPE_TREENET 0x88b5
#define ETH_HDR 14
#define TN_HDR 16
#define TN_FLAG_MAC 0x08	/* kind byte: an authenticated frame */
#define TN_MAC_TRAILER 4	/* its tag's high half, after the payload */
#define MAX_FRAME 1514
#define MAX_TEMPLATES 64

enum { JUNK, TRUNCATED, OVERSIZED, FORGED, MSGHDR, REPLAY, FLIPPED, MUTATED, HIJACK, KINDS };
static const char *const kind_name[KINDS] = {
	"junk", "truncated", "oversized", "forged", "msghdr", "replay", "flipped", "mutated",
	"hijack",
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static unsigned below(unsigned n)
{
	return n ? (unsigned)(rnd() % n) : 0;
}

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78 : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#define P1 0x9e3779b185ebca87ULL
#define P2 0xc2b2ae3d27d4eb4fULL
#define P3 0x165667b19e3779f9ULL
#define P4 0x85ebca77c2b2ae63ULL
#define P5 0x27d4eb2f165667c5ULL

static uint64_t rotl64(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t xxh_round(uint64_t acc, uint64_t in)
{
	return rotl64(acc + in * P2, 31) * P1;
}

static uint64_t xxh_merge(uint64_t h, uint64_t v)
{
	return (h ^ xxh_round(0, v)) * P1 + P4;
}

/* XXH64 with seed 0 (rust/zoid_proto/src/xxh64.rs). */
static uint64_t xxh64(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint64_t h;

	if (n >= 32) {
		uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = -P1;

		for (; end - p >= 32; p += 32) {
			v1 = xxh_round(v1, le64(p));
			v2 = xxh_round(v2, le64(p + 8));
			v3 = xxh_round(v3, le64(p + 16));
			v4 = xxh_round(v4, le64(p + 24));
		}
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v1), v2), v3), v4);
	} else {
		h = P5;
	}
	h += n;
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ xxh_round(0, le64(p)), 27) * P1 + P4;
	if (end - p >= 4) {
		h ^= (uint64_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) * P1;
		h = rotl64(h, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ *p * P5, 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ h >> 32;
}

/*
 * treenet's checksum over header bytes 0..12 and the payload: CRC-32C in
 * frames of wire version 1, XXH64's low 32 bits in version 2.
 */
static uint32_t frame_crc(const uint8_t *tn, size_t payload_len)
{
	uint8_t buf[12 + MAX_FRAME];
	uint32_t c;

	if (tn[0] == 2 && payload_len <= MAX_FRAME) {
		memcpy(buf, tn, 12);
		memcpy(buf + 12, tn + TN_HDR, payload_len);
		return (uint32_t)xxh64(buf, 12 + payload_len);
	}
	c = crc32c(0xffffffff, tn, 12);
	return ~crc32c(c, tn + TN_HDR, payload_len);
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* Sets the payload length field and a right checksum. */
static void seal(uint8_t *tn, size_t payload_len)
{
	put16(tn + 6, (uint16_t)payload_len);
	put32(tn + 12, frame_crc(tn, payload_len));
}

/* A valid treenet frame (Ethernet header included) of len bytes? */
static int valid(const uint8_t *f, size_t len)
{
	size_t plen;

	if (len < ETH_HDR + TN_HDR || be16(f + 12) != ETHERTYPE_TREENET)
		return 0;
	f += ETH_HDR;
	plen = be16(f + 6);
	if ((f[0] != 1 && f[0] != 2) || ETH_HDR + TN_HDR + plen > len)
		return 0;
	/* An authenticated frame (auth_key): its tag cannot be checked here. */
	if (f[1] & TN_FLAG_MAC)
		return ETH_HDR + TN_HDR + plen + TN_MAC_TRAILER <= len;
	return frame_crc(f, plen) == ((uint32_t)be16(f + 12) << 16 | be16(f + 14));
}

struct template {
	uint8_t b[MAX_FRAME];
	size_t len;
};

static struct template tpl[MAX_TEMPLATES];
static int ntpl;
/* The captured hellos (indexes into tpl), and the node id hijack frames
 * claim (-1: no hijack frames). */
static int hello_tpl[MAX_TEMPLATES];
static int nhello;
static long hijack_node = -1;

#define TN_KIND_HELLO 1	/* the kind byte's high nibble */

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

static void capture(int s, long ms, const uint8_t *mac, uint8_t *peer, int *have_peer)
{
	long end = now_ms() + ms;
	uint8_t b[2048];

	while (ntpl < MAX_TEMPLATES) {
		long left = end - now_ms();
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = recv(s, b, sizeof(b), MSG_DONTWAIT);
		if (n <= 0 || n > MAX_FRAME || !valid(b, (size_t)n))
			continue;
		/* A frame from the neighbour gives its MAC. */
		if (memcmp(b + 6, mac, 6) != 0 && !*have_peer) {
			memcpy(peer, b + 6, 6);
			*have_peer = 1;
		}
		memcpy(tpl[ntpl].b, b, (size_t)n);
		tpl[ntpl].len = (size_t)n;
		/* Hellos sealed by checksum can be re-sealed under another id. */
		if (b[ETH_HDR + 1] >> 4 == TN_KIND_HELLO && !(b[ETH_HDR + 1] & TN_FLAG_MAC))
			hello_tpl[nhello++] = ntpl;
		ntpl++;
	}
}

/* Builds frame number i into f (Ethernet header already there); returns
 * its length and sets *kind. */
static size_t build(uint8_t *f, int *kind)
{
	uint8_t *tn = f + ETH_HDR;
	size_t plen, len;
	int k = (int)below(hijack_node < 0 ? HIJACK : KINDS);

	if (ntpl == 0 && k >= REPLAY && k < HIJACK)
		k = FORGED;
	if (k == HIJACK && nhello == 0)
		k = FORGED;
	*kind = k;
	switch (k) {
	case JUNK:
		len = ETH_HDR + below(MAX_FRAME - ETH_HDR + 1);
		for (size_t i = ETH_HDR; i < len; i++)
			f[i] = (uint8_t)rnd();
		return len;
	case TRUNCATED:
	case OVERSIZED:
	case FORGED:
	case MSGHDR:
		plen = below(MAX_FRAME - ETH_HDR - TN_HDR + 1);
		for (size_t i = 0; i < TN_HDR + plen; i++)
			tn[i] = (uint8_t)rnd();
		tn[0] = 1;
		if (k == MSGHDR) {
			/* First data frame, either lane; a random message header
			 * (origin, dst, channel, flags, len, id) with plausible
			 * nodes. */
			tn[1] = 0x30 | 0x1 | (uint8_t)(below(2) << 2) | (uint8_t)(below(2) << 1);
			if (plen < 16)
				plen = 16;
			put16(tn + TN_HDR, (uint16_t)below(4));
			put16(tn + TN_HDR + 2, (uint16_t)below(4));
			put16(tn + TN_HDR + 4, (uint16_t)below(8));
			if (ntpl)
				memcpy(tn + 2, tpl[below(ntpl)].b + ETH_HDR + 2, 4);
		}
		seal(tn, plen);
		if (k == TRUNCATED)
			put16(tn + 6, (uint16_t)(plen + 1 + below(1000)));
		if (k == OVERSIZED)
			put16(tn + 6, (uint16_t)(9000 + below(65536 - 9000)));
		return ETH_HDR + TN_HDR + plen;
	case HIJACK: {
		const struct template *t = &tpl[hello_tpl[below(nhello)]];

		memcpy(tn, t->b + ETH_HDR, t->len - ETH_HDR);
		put16(tn + 2, (uint16_t)hijack_node);
		seal(tn, be16(tn + 6));
		return t->len;
	}
	default:
		break;
	}
	{
		const struct template *t = &tpl[below(ntpl)];

		memcpy(tn, t->b + ETH_HDR, t->len - ETH_HDR);
		len = t->len;
		plen = be16(tn + 6);
	}
	if (k == FLIPPED) {
		for (unsigned n = 1 + below(3); n; n--) {
			size_t at = ETH_HDR + below((unsigned)(len - ETH_HDR));

			f[at] ^= (uint8_t)(1u << below(8));
		}
	} else if (k == MUTATED) {
		switch (below(6)) {
		case 0: tn[1] = (uint8_t)rnd(); break;			/* kind, flags */
		case 1: put16(tn + 2, (uint16_t)rnd()); break;		/* src */
		case 2: put16(tn + 4, (uint16_t)rnd()); break;		/* dst */
		case 3: put32(tn + 8, be16(tn + 8) * 65536u + be16(tn + 10)
			      + (uint32_t)below(512) - 256); break;	/* seq nearby */
		case 4: put32(tn + 8, (uint32_t)rnd()); break;		/* seq anywhere */
		default:
			if (plen)
				tn[TN_HDR + below((unsigned)plen)] = (uint8_t)rnd();
		}
		seal(tn, plen);
	}
	return len;
}

int main(int argc, char **argv)
{
	uint8_t mac[6], peer[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, f[MAX_FRAME];
	unsigned long count[KINDS] = { 0 }, errors = 0, frames;
	struct sockaddr_ll a = { 0 };
	int have_peer = 0, s;
	struct ifreq ifr;
	long capture_ms = 3000, t0, dt;

	if (argc < 3) {
		fprintf(stderr, "usage: tnflood IFACE FRAMES [SEED [CAPTURE_MS [HIJACK_NODE]]]\n");
		return 2;
	}
	frames = strtoul(argv[2], NULL, 0);
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 0) | 1 : 0x9e3779b97f4a7c15ULL;
	if (argc > 4)
		capture_ms = strtol(argv[4], NULL, 0);
	if (argc > 5)
		hijack_node = strtol(argv[5], NULL, 0) & 0xffff;
	crc_init();
	s = socket(AF_PACKET, SOCK_RAW, htons(ETHERTYPE_TREENET));
	if (s < 0) {
		perror("tnflood: socket");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	if (ioctl(s, SIOCGIFINDEX, &ifr) < 0) {
		perror("tnflood: SIOCGIFINDEX");
		return 1;
	}
	a.sll_family = AF_PACKET;
	a.sll_protocol = htons(ETHERTYPE_TREENET);
	a.sll_ifindex = ifr.ifr_ifindex;
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || ioctl(s, SIOCGIFHWADDR, &ifr) < 0) {
		perror("tnflood: bind");
		return 1;
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	capture(s, capture_ms, mac, peer, &have_peer);
	/* Stop receiving: the flood is one way. */
	shutdown(s, SHUT_RD);
	memcpy(f, peer, 6);
	memcpy(f + 6, mac, 6);
	put16(f + 12, ETHERTYPE_TREENET);
	t0 = now_ms();
	for (unsigned long i = 0; i < frames; i++) {
		int kind;
		size_t len = build(f, &kind);

		count[kind]++;
		while (send(s, f, len, 0) < 0) {
			if (errno != ENOBUFS && errno != EAGAIN) {
				errors++;
				break;
			}
			usleep(200);
		}
	}
	dt = now_ms() - t0;
	printf("tnflood: sent=%lu templates=%d peer=%s errors=%lu ms=%ld fps=%ld",
	       frames, ntpl, have_peer ? "captured" : "broadcast", errors, dt,
	       dt > 0 ? (long)(frames * 1000 / (unsigned long)dt) : 0L);
	for (int k = 0; k < KINDS; k++)
		printf(" %s=%lu", kind_name[k], count[k]);
	printf("\n");
	return errors ? 1 : 0;
}
