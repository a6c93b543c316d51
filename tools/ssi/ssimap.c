// SPDX-License-Identifier: GPL-2.0
/*
 * ssimap: shared memory between nodes through /dev/ssi (ssi.ko).
 *
 *   ssimap [-s SET] add OBJECT OFFSET COUNT
 *       adds 1 to the 32-bit word at OFFSET, COUNT times, atomically;
 *       prints the word after the last add
 *   ssimap [-s SET] get OBJECT OFFSET        prints the 32-bit word
 *   ssimap [-s SET] get64le OBJECT OFFSET    prints the little-endian
 *       64-bit word (what /sys/kernel/ssi/add and read count)
 *   ssimap [-s SET] put OBJECT OFFSET VALUE  stores the 32-bit word
 *   ssimap [-s SET] put64le OBJECT OFFSET VALUE
 *       stores the little-endian 64-bit word
 *   ssimap [-s SET] wait OBJECT OFFSET VALUE SECONDS
 *       waits until the 32-bit word is VALUE (exit 1 on timeout)
 *   ssimap [-s SET] send OBJECT ROUNDS
 *   ssimap [-s SET] receive OBJECT ROUNDS
 *       message passing between two nodes over objects OBJECT (data) and
 *       OBJECT+1 (flags): for each round the sender writes the data, then
 *       the flag; the receiver waits for the flag, checks the data (it
 *       must see it: sequential consistency), then acknowledges
 *   ssimap private       a private mapping must be refused (EINVAL)
 *
 * Objects are 4 KiB pages; words are native-endian.  A mapping of an
 * object the pset cannot serve raises SIGBUS (exit status 135).
 *
 * With -f FILE instead of -s SET, the commands map pages of FILE instead
 * of objects of /dev/ssi: a file on a `mount -t zoidfs -o consistency=ssi`
 * mount, whose pages ssi keeps coherent across CNs (OBJECT is the page
 * index; the file must reach that far).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SSI_IOC_SET _IO('s', 1)
#define OBJECT_SIZE 4096u

static int ssi_fd = -1;

static void die(const char *what)
{
	fprintf(stderr, "ssimap: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *s == '\0' || *end != '\0') {
		fprintf(stderr, "ssimap: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

/* Maps COUNT objects from FIRST, shared. */
static volatile uint8_t *map(unsigned long first, unsigned long count)
{
	void *p = mmap(NULL, count * OBJECT_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, ssi_fd, (off_t)first * OBJECT_SIZE);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static volatile uint32_t *word(volatile uint8_t *obj, unsigned long offset)
{
	if (offset % 4 || offset + 4 > OBJECT_SIZE) {
		fprintf(stderr, "ssimap: offset %lu: not a word of the object\n", offset);
		exit(2);
	}
	return (volatile uint32_t *)(obj + offset);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until *W == V; 0, or -1 after SECONDS. */
static int wait_for(volatile uint32_t *w, uint32_t v, double seconds)
{
	double end = now() + seconds;

	while (__atomic_load_n(w, __ATOMIC_SEQ_CST) != v) {
		if (now() > end)
			return -1;
		/* Let the node's ssi thread run (one CPU per VM). */
		usleep(200);
	}
	return 0;
}

static int message_passing(int sender, unsigned long object, unsigned long rounds)
{
	volatile uint8_t *m = map(object, 2);
	volatile uint32_t *data = word(m, 0);
	volatile uint32_t *flag = word(m + OBJECT_SIZE, 0);
	volatile uint32_t *ack = word(m + OBJECT_SIZE, 64);
	uint32_t i;

	for (i = 1; i <= rounds; i++) {
		if (sender) {
			__atomic_store_n(data, i * 7u, __ATOMIC_SEQ_CST);
			__atomic_store_n(flag, i, __ATOMIC_SEQ_CST);
			if (wait_for(ack, i, 60)) {
				fprintf(stderr, "ssimap: round %u: no ack\n", i);
				return 1;
			}
		} else {
			uint32_t d;

			if (wait_for(flag, i, 60)) {
				fprintf(stderr, "ssimap: round %u: no flag\n", i);
				return 1;
			}
			d = __atomic_load_n(data, __ATOMIC_SEQ_CST);
			if (d != i * 7u) {
				fprintf(stderr, "ssimap: round %u: data %u, want %u\n",
					i, d, i * 7u);
				return 1;
			}
			__atomic_store_n(ack, i, __ATOMIC_SEQ_CST);
		}
	}
	printf("%lu rounds\n", rounds);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ssimap [-s SET | -f FILE] add OBJECT OFFSET COUNT | get OBJECT OFFSET |\n"
		"       get64le OBJECT OFFSET | put OBJECT OFFSET VALUE |\n"
		"       put64le OBJECT OFFSET VALUE |\n"
		"       wait OBJECT OFFSET VALUE SECONDS | send OBJECT ROUNDS |\n"
		"       receive OBJECT ROUNDS | private\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long set = 0;
	const char *cmd, *file = NULL;
	int a = 1;

	if (argc > 2 && !strcmp(argv[1], "-s")) {
		set = number(argv[2]);
		a = 3;
	} else if (argc > 2 && !strcmp(argv[1], "-f")) {
		file = argv[2];
		a = 3;
	}
	if (a >= argc)
		usage();
	cmd = argv[a++];
	ssi_fd = open(file ? file : "/dev/ssi", O_RDWR);
	if (ssi_fd < 0)
		die(file ? file : "/dev/ssi");
	if (!file && ioctl(ssi_fd, SSI_IOC_SET, set))
		die("SSI_IOC_SET");

	if (!strcmp(cmd, "add") && argc - a == 3) {
		volatile uint32_t *w = word(map(number(argv[a]), 1), number(argv[a + 1]));
		unsigned long n = number(argv[a + 2]), i;
		uint32_t v = 0;

		for (i = 0; i < n; i++)
			v = __atomic_add_fetch(w, 1, __ATOMIC_SEQ_CST);
		printf("%u\n", v);
	} else if (!strcmp(cmd, "get") && argc - a == 2) {
		printf("%u\n", *word(map(number(argv[a]), 1), number(argv[a + 1])));
	} else if (!strcmp(cmd, "get64le") && argc - a == 2) {
		volatile uint8_t *obj = map(number(argv[a]), 1);
		unsigned long off = number(argv[a + 1]);
		unsigned long long v = 0;
		int i;

		if (off % 8 || off + 8 > OBJECT_SIZE)
			usage();
		for (i = 7; i >= 0; i--)
			v = v << 8 | obj[off + i];
		printf("%llu\n", v);
	} else if (!strcmp(cmd, "put64le") && argc - a == 3) {
		volatile uint8_t *obj = map(number(argv[a]), 1);
		unsigned long off = number(argv[a + 1]);
		unsigned long long v = strtoull(argv[a + 2], NULL, 0);
		int i;

		if (off % 8 || off + 8 > OBJECT_SIZE)
			usage();
		for (i = 0; i < 8; i++, v >>= 8)
			obj[off + i] = (uint8_t)v;
	} else if (!strcmp(cmd, "put") && argc - a == 3) {
		volatile uint32_t *w = word(map(number(argv[a]), 1), number(argv[a + 1]));

		__atomic_store_n(w, (uint32_t)number(argv[a + 2]), __ATOMIC_SEQ_CST);
	} else if (!strcmp(cmd, "wait") && argc - a == 4) {
		volatile uint32_t *w = word(map(number(argv[a]), 1), number(argv[a + 1]));

		if (wait_for(w, (uint32_t)number(argv[a + 2]), number(argv[a + 3]))) {
			fprintf(stderr, "ssimap: timed out: the word is %u\n", *w);
			return 1;
		}
	} else if ((!strcmp(cmd, "send") || !strcmp(cmd, "receive")) && argc - a == 2) {
		return message_passing(!strcmp(cmd, "send"), number(argv[a]), number(argv[a + 1]));
	} else if (!strcmp(cmd, "private") && argc - a == 0) {
		void *p = mmap(NULL, OBJECT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ssi_fd, 0);

		if (p != MAP_FAILED || errno != EINVAL) {
			fprintf(stderr, "ssimap: a private mapping was not refused with EINVAL\n");
			return 1;
		}
	} else {
		usage();
	}
	return 0;
}
