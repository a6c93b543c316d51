// SPDX-License-Identifier: GPL-2.0
/*
 * kprof: a whole-machine CPU profile of a guest, with no perf(1) in the
 * image.  It samples every online CPU with the kernel's software cpu-clock
 * event (an hrtimer: no PMU needed, so it works under QEMU's TCG), runs a
 * command or sleeps, then prints where the samples fell: kernel functions
 * (modules included, named from /proc/kallsyms), user space, and idle.
 *
 *   kprof [-F hz] [-n top] [-o file] seconds
 *   kprof [-F hz] [-n top] [-o file] -- command [args...]
 *
 * Output (stdout, or -o file), one line per function, most samples first:
 *   PROF <percent> <samples> <symbol> [module]
 * (Rust symbols mangled: c++filt demangles them).
 * after a header line `PROF-TOTAL <samples> cpus=<n> hz=<hz> seconds=<s>`.
 * `[user]` collects every user-space sample and `[idle]` the samples in the
 * idle loop (default_idle and friends, so the percentages of the rest are
 * of the time the machine was busy and of the time it was not, both).
 *
 * Used by scripts/bench-profile.sh (docs/treenet.md "Where the time goes").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 64
#define RING_PAGES 256 /* data pages per CPU (a power of two) */

struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size;
};

struct sample_count {
	uint64_t ip;
	uint64_t n;
};

/* Every kernel-mode sample's ip, unsorted; user samples are only counted. */
static uint64_t *ips;
static size_t nips, capips;
static uint64_t user_samples, lost_samples;

static void die(const char *what)
{
	fprintf(stderr, "kprof: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void keep_ip(uint64_t ip)
{
	if (nips == capips) {
		capips = capips ? capips * 2 : 1 << 16;
		ips = realloc(ips, capips * sizeof(*ips));
		if (!ips)
			die("realloc");
	}
	ips[nips++] = ip;
}

/* Takes every complete record out of one CPU's ring. */
static void drain(struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		uint8_t rec[64];
		size_t i;

		for (i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(tail + i) & (r->size - 1)];
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE && h.size <= sizeof(rec)) {
			uint64_t ip;

			for (i = 0; i < h.size; i++)
				rec[i] = r->data[(tail + i) & (r->size - 1)];
			memcpy(&ip, rec + sizeof(h), sizeof(ip));
			if ((h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
				keep_ip(ip);
			else
				user_samples++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t lost;

			for (i = 0; i < 16; i++)
				rec[i] = r->data[(tail + sizeof(h) + i) & (r->size - 1)];
			memcpy(&lost, rec + 8, sizeof(lost));
			lost_samples += lost;
		}
		tail += h.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

struct ksym {
	uint64_t addr;
	char *name; /* "name" or "name [module]" */
};

static struct ksym *syms;
static size_t nsyms;

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Reads /proc/kallsyms' text symbols ("name [module]"), sorted by address. */
static void load_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[1024];
	size_t cap = 0;

	if (!f)
		die("/proc/kallsyms (the kernel needs CONFIG_KALLSYMS)");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[512], mod[64] = "";
		int k = sscanf(line, "%llx %c %511s %63s", &addr, &type, name, mod);

		if (k < 3 || addr == 0 || (type != 't' && type != 'T' && type != 'W' && type != 'w'))
			continue;
		if (nsyms == cap) {
			cap = cap ? cap * 2 : 1 << 14;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms)
				die("realloc");
		}
		syms[nsyms].addr = addr;
		if (asprintf(&syms[nsyms].name, "%s%s%s", name, k == 4 ? " " : "",
			     k == 4 ? mod : "") < 0)
			die("asprintf");
		nsyms++;
	}
	fclose(f);
	if (nsyms == 0) {
		fprintf(stderr, "kprof: /proc/kallsyms shows no addresses (kptr_restrict?)\n");
		exit(1);
	}
	qsort(syms, nsyms, sizeof(*syms), by_addr);
}

/* The symbol holding ip (the last one at or below it), or NULL. */
static const char *symbol_of(uint64_t ip)
{
	size_t lo = 0, hi = nsyms;

	if (ip < syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return syms[lo].name;
}

struct row {
	const char *name;
	uint64_t n;
};

static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->n > y->n ? -1 : x->n < y->n;
}

static int by_name(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static int is_idle(const char *name)
{
	static const char *const idle[] = {
		"default_idle",	  "default_idle_call", "pv_native_safe_halt", "native_safe_halt",
		"arch_cpu_idle",  "do_idle",	       "cpu_idle_poll",	      "mwait_idle",
		"acpi_idle_do_entry", NULL,
	};

	for (int i = 0; idle[i]; i++)
		if (strcmp(name, idle[i]) == 0)
			return 1;
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: kprof [-F hz] [-n top] [-o file] seconds\n"
			"       kprof [-F hz] [-n top] [-o file] -- command [args...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct ring rings[MAX_CPUS];
	int hz = 2000, top = 30, ncpu = 0, opt;
	double seconds = 0;
	const char *outpath = NULL;
	pid_t child = -1;
	int child_status = -1;
	struct timespec t0, t1;
	FILE *out = stdout;

	while ((opt = getopt(argc, argv, "+F:n:o:")) != -1) {
		switch (opt) {
		case 'F': hz = atoi(optarg); break;
		case 'n': top = atoi(optarg); break;
		case 'o': outpath = optarg; break;
		default: usage();
		}
	}
	if (optind >= argc || hz <= 0 || top <= 0)
		usage();
	if (strcmp(argv[optind - 1], "--") != 0) {
		seconds = atof(argv[optind]);
		if (seconds <= 0)
			usage();
	}

	for (int cpu = 0; cpu < MAX_CPUS; cpu++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_freq = (uint64_t)hz,
			.freq = 1,
			.sample_type = PERF_SAMPLE_IP,
			.disabled = 1,
			.wakeup_events = 1024,
		};
		long fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, 0);
		size_t len = (RING_PAGES + 1) * (size_t)getpagesize();
		void *m;

		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL)
				break; /* no such CPU */
			die("perf_event_open (CONFIG_PERF_EVENTS, root)");
		}
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
		if (m == MAP_FAILED)
			die("mmap");
		rings[ncpu].fd = (int)fd;
		rings[ncpu].meta = m;
		rings[ncpu].data = (uint8_t *)m + getpagesize();
		rings[ncpu].size = RING_PAGES * (size_t)getpagesize();
		ncpu++;
	}
	if (ncpu == 0)
		die("no CPU to sample");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < ncpu; i++)
		ioctl(rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	if (seconds == 0) {
		child = fork();
		if (child < 0)
			die("fork");
		if (child == 0) {
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "kprof: cannot run %s: %s\n", argv[optind], strerror(errno));
			_exit(127);
		}
	}
	for (;;) {
		struct timespec now;

		usleep(50000);
		for (int i = 0; i < ncpu; i++)
			drain(&rings[i]);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (stop)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child)
			break;
		if (child < 0 && (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	for (int i = 0; i < ncpu; i++) {
		ioctl(rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		drain(&rings[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	load_kallsyms();
	/* Name every kernel sample, then count samples per name. */
	struct row *rows = calloc(nips + 2, sizeof(*rows));
	size_t nrows = 0;
	uint64_t idle = 0, total = nips + user_samples;

	if (!rows)
		die("calloc");
	for (size_t i = 0; i < nips; i++) {
		const char *name = symbol_of(ips[i]);

		rows[nrows].name = name ? name : "[unknown]";
		rows[nrows].n = 1;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), by_name);
	size_t w = 0;
	for (size_t i = 0; i < nrows; i++) {
		if (w > 0 && strcmp(rows[w - 1].name, rows[i].name) == 0) {
			rows[w - 1].n++;
			continue;
		}
		rows[w++] = rows[i];
	}
	nrows = w;
	for (size_t i = 0; i < nrows; i++) {
		if (is_idle(rows[i].name)) {
			idle += rows[i].n;
			rows[i].n = 0;
		}
	}
	rows[nrows++] = (struct row){ "[user]", user_samples };
	rows[nrows++] = (struct row){ "[idle]", idle };
	qsort(rows, nrows, sizeof(*rows), by_count);

	if (outpath) {
		out = fopen(outpath, "w");
		if (!out)
			die(outpath);
	}
	fprintf(out, "PROF-TOTAL %llu cpus=%d hz=%d seconds=%.1f lost=%llu\n",
		(unsigned long long)total, ncpu, hz,
		(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		(unsigned long long)lost_samples);
	for (size_t i = 0; i < nrows && (int)i < top; i++) {
		if (rows[i].n == 0)
			break;
		fprintf(out, "PROF %5.1f %7llu %s\n", total ? 100.0 * rows[i].n / total : 0.0,
			(unsigned long long)rows[i].n, rows[i].name);
	}
	if (out != stdout)
		fclose(out);
	if (child > 0) {
		if (child_status == -1 && waitpid(child, &child_status, 0) != child)
			return 1;
		return WIFEXITED(child_status) ? WEXITSTATUS(child_status) : 1;
	}
	return 0;
}
