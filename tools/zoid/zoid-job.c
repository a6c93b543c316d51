// SPDX-License-Identifier: GPL-2.0
/*
 * zoid-job: launches a job on the CNs of this ION and forwards its stdout,
 * stderr and stdin (the kernel side is zoid.ko's ZOID_IOC_JOB_RUN and the
 * job's descriptor, tools/zoid/zoid.h).
 *
 *   zoid-job run [--cns all|LIST] [--local N] [--uid U] [--gid G]
 *                [--env K=V]... [--cwd DIR] [--stdin none|0|all]
 *                [--output DIR] [--stage] [-v] -- PROGRAM ARGS...
 *   zoid-job kill ID [SIG]
 *   zoid-job list
 *
 * run: LIST is comma-separated node ids and ranges (1,3-5); `all` (the
 * default) is every attached CN.  CN i of the list runs ranks
 * i*N .. i*N+N-1 (--local N, default 1).  The ranks' environment is only
 * the --env values given, the owner's HOME, USER and SHELL (from
 * /etc/passwd, or this process's own environment for an owner without
 * an entry; also told to the ION's job scripts, which run
 * $HOME/zoid-user-script.sh) and
 * ZOID_JOB_RANK, ZOID_JOB_ID, ZOID_JOB_GLOBAL_SIZE and
 * ZOID_JOB_LOCAL_SIZE; PROGRAM is an absolute
 * path or looked up in the PATH given (default /sbin:/bin:/usr/sbin:
 * /usr/bin) on the CNs.  The working directory is --cwd's, or the
 * kernel's default (this directory need not exist on the CNs).  The job
 * runs as this user, or as --uid/--gid (root only); --uid without --gid
 * takes the user's group from /etc/passwd.
 *
 * Each rank's output is printed as it arrives, tagged per line like
 * `mpirun --tag-output`: its stdout lines to stdout as "[R] line", its
 * stderr lines to stderr as "[R] line".  A partial line is held until its
 * newline or the rank's end (then printed with a newline added); a line
 * longer than 64 KiB is printed in pieces of 64 KiB, each a tagged line of
 * its own.  With --output DIR, each rank's output goes raw to DIR/R.out
 * and DIR/R.err instead (created 0644, or truncated).  -v prints
 * "zoid-job: job ID, N ranks" to stderr at the start.  --stage first
 * copies PROGRAM (an absolute path) to the same path on the job's CNs
 * with f2cn (ZeptoOS's pre-staging of large binaries; CAP_SYS_ADMIN).
 *
 * stdin: 0 (default): this program's stdin goes to rank 0 (a thread copies
 * it, then tells the job it ended); all: to every rank; none: the ranks
 * read end-of-file at once.
 *
 * The first SIGINT or SIGTERM is forwarded to every running rank, a second
 * one sends SIGKILL; either way the job's end is still waited for.  Every
 * rank that ends badly is named on stderr; the exit status is the job's
 * (the first rank to end badly: its exit status, 128+signal, 127 if it did
 * not start, 255 if its CN was lost; else 0), or 1 if the job's output
 * could not be written although the job succeeded.  Output nobody reads
 * any more (SIGPIPE) ends this program and, with it, the job.
 *
 * kill: sends SIG (default TERM; a number 1..64 or a name: TERM, SIGKILL,
 * int ...) to every running rank of job ID.  list: prints
 * /sys/kernel/zoid/launched.
 *
 * Errors are printed as "zoid-job: <what>: <strerror>"; the status is 2
 * for a usage error, 1 when the job could not start (or kill/list failed).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zoid.h"

#define LINE_MAX_HELD (64 * 1024)	/* a partial line held per rank-stream */
#define READ_BUF (256 * 1024)		/* events per read() */
#define OUT_BUF (64 * 1024)		/* tagged output gathered per destination */
#define MAX_CNS 65535
/* The launched jobs, one a line (the spec called it jobs, a name the job
 * hooks' counters have). */
#define JOBS_FILE "/sys/kernel/zoid/launched"

static const char *prog = "zoid-job";

static void err_msg(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "zoid-job: <what>: <strerror>" (err 0: without the strerror part). */
static void err_msg(int err, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(err));
	else
		fprintf(stderr, "%s: %s\n", prog, what);
	fflush(stderr);
}

static int usage(FILE *f, int status)
{
	fprintf(f,
		"usage: zoid-job run [--cns all|LIST] [--local N] [--uid U] [--gid G]\n"
		"                    [--env K=V]... [--cwd DIR] [--stdin none|0|all]\n"
		"                    [--output DIR] [--stage] [-v] -- PROGRAM ARGS...\n"
		"       zoid-job kill ID [SIG]\n"
		"       zoid-job list\n"
		"LIST: node ids and ranges, comma-separated (1,3-5)\n");
	return status;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return usage(stderr, 2);
}

/* A decimal number in [0, max]; -1 if s is not one. */
static long long number(const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	return (long long)v;
}

/* Signal names, for kill's argument and the messages about ranks. */
static const struct { int sig; const char *name; } signames[] = {
	{ SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGILL, "ILL" },
	{ SIGTRAP, "TRAP" }, { SIGABRT, "ABRT" }, { SIGBUS, "BUS" }, { SIGFPE, "FPE" },
	{ SIGKILL, "KILL" }, { SIGUSR1, "USR1" }, { SIGSEGV, "SEGV" }, { SIGUSR2, "USR2" },
	{ SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" }, { SIGTERM, "TERM" },
#ifdef SIGSTKFLT
	{ SIGSTKFLT, "STKFLT" },
#endif
	{ SIGCHLD, "CHLD" }, { SIGCONT, "CONT" }, { SIGSTOP, "STOP" }, { SIGTSTP, "TSTP" },
	{ SIGTTIN, "TTIN" }, { SIGTTOU, "TTOU" }, { SIGURG, "URG" }, { SIGXCPU, "XCPU" },
	{ SIGXFSZ, "XFSZ" }, { SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" },
	{ SIGWINCH, "WINCH" }, { SIGIO, "IO" },
#ifdef SIGPWR
	{ SIGPWR, "PWR" },
#endif
	{ SIGSYS, "SYS" },
};

/* The kernel's real-time signals (by number only: the C library's
 * SIGRTMIN is not the kernel's). */
#define KERNEL_SIGRTMIN 32
#define KERNEL_SIGRTMAX 64

static void signal_name(int sig, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(signames) / sizeof(signames[0]); i++)
		if (signames[i].sig == sig) {
			snprintf(buf, len, "%s", signames[i].name);
			return;
		}
	snprintf(buf, len, sig >= KERNEL_SIGRTMIN && sig <= KERNEL_SIGRTMAX ? "real-time" : "?");
}

/* A signal number (1..64) or name (TERM, SIGTERM, term); -1 if none. */
static int signal_of(const char *s)
{
	long long n = number(s, KERNEL_SIGRTMAX);

	if (n >= 1)
		return (int)n;
	if (n == 0)
		return -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(signames) / sizeof(signames[0]); i++)
		if (!strcasecmp(s, signames[i].name))
			return signames[i].sig;
	return -1;
}

static int open_zoid(void)
{
	int fd = open("/dev/zoid", O_RDWR | O_CLOEXEC);

	/* ioctls need no write permission: a read-only open does as well. */
	if (fd < 0 && errno == EACCES)
		fd = open("/dev/zoid", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err_msg(errno, "/dev/zoid");
	return fd;
}

/* write() all of it; 0 or an errno. */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- kill, list ---- */

static int cmd_kill(int argc, char **argv)
{
	struct zoid_job_kill k = { .sig = SIGTERM };
	long long id;
	int fd;

	if (argc < 2 || argc > 3)
		return usage(stderr, 2);
	id = number(argv[1], 0xffffffffULL);
	if (id < 0)
		return bad_usage("not a job id: %s", argv[1]);
	if (argc == 3) {
		int sig = signal_of(argv[2]);

		if (sig < 0)
			return bad_usage("not a signal: %s", argv[2]);
		k.sig = (uint32_t)sig;
	}
	k.job_id = (uint32_t)id;
	fd = open_zoid();
	if (fd < 0)
		return 1;
	if (ioctl(fd, ZOID_IOC_JOB_KILL, &k) < 0) {
		err_msg(errno, "kill job %u", k.job_id);
		return 1;
	}
	close(fd);
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	char buf[8192];
	ssize_t n;
	int fd, err;

	(void)argv;
	if (argc != 1)
		return usage(stderr, 2);
	fd = open(JOBS_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_msg(errno, "%s", JOBS_FILE);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err_msg(errno, "%s", JOBS_FILE);
			return 1;
		}
		err = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (err) {
			err_msg(err, "writing stdout");
			return 1;
		}
	}
	close(fd);
	return 0;
}

/* ---- run: the job's description ---- */

struct bytes {
	char *p;
	size_t len, cap;
};

static void bytes_put(struct bytes *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			err_msg(ENOMEM, "the job's description");
			exit(1);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void bytes_str(struct bytes *b, const char *s)
{
	bytes_put(b, s, strlen(s) + 1);
}

/* LIST: "1,3-5"; 0 or -1 (a usage error, printed). */
static int parse_cns(const char *list, uint16_t **ids, uint32_t *n)
{
	const char *p = list;

	*n = 0;
	free(*ids);
	*ids = NULL;
	while (*p) {
		unsigned long a, b;
		char *end;

		if (!isdigit((unsigned char)*p))
			goto bad;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				goto bad;
			b = strtoul(p, &end, 10);
		}
		if (a > 0xfffe || b > 0xfffe || a > b || b - a + 1 > MAX_CNS - *n)
			goto bad;
		*ids = realloc(*ids, (*n + (b - a + 1)) * sizeof(**ids));
		if (!*ids) {
			err_msg(ENOMEM, "the CN list");
			exit(1);
		}
		for (unsigned long i = a; i <= b; i++)
			(*ids)[(*n)++] = (uint16_t)i;
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	if (*n)
		return 0;
bad:
	bad_usage("bad CN list: %s (node ids and ranges: 1,3-5, or all)", list);
	return -1;
}

/* An /etc/passwd entry: name, uid, gid, home, shell. */
struct pw {
	char name[64], home[512], shell[256];
	long long gid;
};

static void copy_field(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
	dst[strcspn(dst, "\n")] = 0;
}

/* uid's entry in /etc/passwd; -1 if it has none there. */
static int passwd_entry(uint32_t uid, struct pw *pw)
{
	FILE *f = fopen("/etc/passwd", "re");
	char line[1024];
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *field[7], *s = line;
		int i;

		for (i = 0; i < 7; i++) {
			field[i] = s;
			s = strchr(s, ':');
			if (!s) {
				i++;
				break;
			}
			*s++ = 0;
		}
		if (i < 7 || number(field[2], 0xfffffffeULL) != uid)
			continue;
		pw->gid = number(field[3], 0xfffffffeULL);
		copy_field(pw->name, sizeof(pw->name), field[0]);
		copy_field(pw->home, sizeof(pw->home), field[5]);
		copy_field(pw->shell, sizeof(pw->shell), field[6]);
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* The primary group of uid in /etc/passwd; -1 if it has no entry there. */
static long long passwd_gid(uint32_t uid)
{
	struct pw pw;

	return passwd_entry(uid, &pw) ? -1 : pw.gid;
}

/* Whether envs[0..n) sets NAME. */
static int env_has(char **envs, uint32_t n, const char *name)
{
	size_t len = strlen(name);

	for (uint32_t i = 0; i < n; i++)
		if (!strncmp(envs[i], name, len) && envs[i][len] == '=')
			return 1;
	return 0;
}

/* ---- run: output ---- */

/* Tagged output gathered for one destination (stdout or stderr). */
struct sink {
	int fd;
	const char *name;
	char buf[OUT_BUF];
	size_t len;
	int err;		/* a write failed: what follows is dropped */
};

static struct sink sinks[3] = {
	[ZOID_JOB_STDOUT] = { .fd = STDOUT_FILENO, .name = "stdout" },
	[ZOID_JOB_STDERR] = { .fd = STDERR_FILENO, .name = "stderr" },
};
static int output_lost;

static void sink_failed(struct sink *s, int err, const char *what)
{
	if (!s->err) {
		s->err = err;
		output_lost = 1;
		err_msg(err, "writing %s (its further output is dropped)", what);
	}
}

static void sink_flush(struct sink *s)
{
	int err;

	if (!s->len)
		return;
	err = s->err ? 0 : write_all(s->fd, s->buf, s->len);
	s->len = 0;
	if (err)
		sink_failed(s, err, s->name);
}

static void sink_put(struct sink *s, const void *p, size_t n)
{
	int err;

	if (s->err)
		return;
	if (s->len + n > sizeof(s->buf))
		sink_flush(s);
	if (n >= sizeof(s->buf)) {
		err = s->err ? 0 : write_all(s->fd, p, n);
		if (err)
			sink_failed(s, err, s->name);
		return;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void sinks_flush(void)
{
	sink_flush(&sinks[ZOID_JOB_STDOUT]);
	sink_flush(&sinks[ZOID_JOB_STDERR]);
}

/* One rank's stdout or stderr. */
struct rstream {
	char *held;		/* a partial line (tagged mode), LINE_MAX_HELD bytes */
	size_t len;
	int fd;			/* --output: DIR/R.out or DIR/R.err, -1 until opened */
	int err;		/* --output: writing it failed */
};

struct job {
	uint32_t id, ranks;
	int fd;
	const char *outdir;	/* --output DIR, or NULL */
	struct rstream *st;	/* [rank * 2 + stream - 1] */
	unsigned char *ended;	/* per rank */
};

static void tagged_line(uint32_t rank, int stream, const char *held, size_t hlen,
			const char *p, size_t n, int add_newline)
{
	struct sink *s = &sinks[stream];
	char tag[16];
	int tlen = snprintf(tag, sizeof(tag), "[%u] ", rank);

	sink_put(s, tag, (size_t)tlen);
	sink_put(s, held, hlen);
	sink_put(s, p, n);
	if (add_newline)
		sink_put(s, "\n", 1);
}

/* Data of one rank-stream in tagged mode: complete lines out, the rest held. */
static void tagged_data(struct job *j, uint32_t rank, int stream, const char *p, size_t n)
{
	struct rstream *r = &j->st[rank * 2 + stream - 1];

	while (n) {
		size_t room = LINE_MAX_HELD - r->len;
		const char *nl = memchr(p, '\n', n < room + 1 ? n : room + 1);

		if (nl) {
			size_t seg = (size_t)(nl - p) + 1;

			tagged_line(rank, stream, r->held, r->len, p, seg, 0);
			r->len = 0;
			p += seg;
			n -= seg;
		} else if (n > room) {
			/* A line longer than LINE_MAX_HELD: out goes a piece of it. */
			tagged_line(rank, stream, r->held, r->len, p, room, 1);
			r->len = 0;
			p += room;
			n -= room;
		} else {
			if (!r->held) {
				r->held = malloc(LINE_MAX_HELD);
				if (!r->held) {
					err_msg(ENOMEM, "holding rank %u's partial line", rank);
					exit(1);
				}
			}
			memcpy(r->held + r->len, p, n);
			r->len += n;
			n = 0;
		}
	}
}

/* --output: DIR/R.out or DIR/R.err, opened (created or truncated) once. */
static int output_file(struct job *j, uint32_t rank, int stream)
{
	struct rstream *r = &j->st[rank * 2 + stream - 1];
	char path[PATH_MAX];

	if (r->fd >= 0 || r->err)
		return r->fd;
	snprintf(path, sizeof(path), "%s/%u.%s", j->outdir, rank,
		 stream == ZOID_JOB_STDOUT ? "out" : "err");
	do
		r->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (r->fd < 0 && errno == EINTR);
	if (r->fd < 0) {
		r->err = errno;
		output_lost = 1;
		err_msg(errno, "%s (rank %u's output there is dropped)", path, rank);
	}
	return r->fd;
}

static void file_data(struct job *j, uint32_t rank, int stream, const char *p, size_t n)
{
	struct rstream *r = &j->st[rank * 2 + stream - 1];
	int fd = output_file(j, rank, stream), err;

	if (fd < 0)
		return;
	err = write_all(fd, p, n);
	if (err) {
		char what[PATH_MAX + 16];

		snprintf(what, sizeof(what), "%s/%u.%s", j->outdir, rank,
			 stream == ZOID_JOB_STDOUT ? "out" : "err");
		close(fd);
		r->fd = -1;
		r->err = err;
		output_lost = 1;
		err_msg(err, "writing %s (rank %u's further output there is dropped)", what, rank);
	}
}

/* A rank ended (or the job did): its held partial lines go out with a
 * newline added; with --output its files exist (empty if it printed
 * nothing) and are closed.  Once more for a rank is harmless. */
static void rank_done(struct job *j, uint32_t rank)
{
	for (int stream = ZOID_JOB_STDOUT; stream <= ZOID_JOB_STDERR; stream++) {
		struct rstream *r = &j->st[rank * 2 + stream - 1];

		if (j->outdir) {
			if (output_file(j, rank, stream) >= 0 && close(r->fd) < 0 && !r->err) {
				output_lost = 1;
				err_msg(errno, "closing %s/%u.%s", j->outdir, rank,
					stream == ZOID_JOB_STDOUT ? "out" : "err");
			}
			r->fd = -1;
			r->err = -1;	/* no reopening */
		} else if (r->len) {
			tagged_line(rank, stream, r->held, r->len, "", 0, 1);
			r->len = 0;
		}
		free(r->held);
		r->held = NULL;
	}
	j->ended[rank] = 1;
}

static void rank_status(uint32_t rank, int type, int32_t value)
{
	char name[16];

	if (type == ZOID_JOB_EV_EXIT) {
		if (WIFEXITED(value)) {
			if (WEXITSTATUS(value))
				err_msg(0, "rank %u exited with status %d", rank, WEXITSTATUS(value));
		} else if (WIFSIGNALED(value)) {
			signal_name(WTERMSIG(value), name, sizeof(name));
			err_msg(0, "rank %u killed by signal %d (%s)", rank, WTERMSIG(value), name);
		} else {
			err_msg(0, "rank %u ended with wait status %#x", rank, (unsigned int)value);
		}
	} else if (value == EHOSTDOWN || value == ECONNRESET) {
		err_msg(value, "rank %u lost", rank);
	} else {
		err_msg(value > 0 ? value : EIO, "rank %u did not start", rank);
	}
}

/* ---- run: stdin and signals ---- */

static volatile sig_atomic_t job_fd = -1;
static volatile sig_atomic_t signals_seen;

/* First SIGINT/SIGTERM: to the ranks; the next: SIGKILL.  The ioctl is
 * made right here (a plain system call), so a signal can never wait for
 * the job's next event. */
static void on_signal(int sig)
{
	static const char first[] = "zoid-job: signal forwarded to the job (again: SIGKILL)\n";
	static const char again[] = "zoid-job: SIGKILL sent to the job\n";
	int saved = errno;
	uint32_t s = signals_seen++ ? SIGKILL : (uint32_t)sig;

	if (job_fd >= 0 && ioctl(job_fd, ZOID_JOB_IOC_SIGNAL, &s) == 0) {
		if (s == SIGKILL)
			(void)!write(STDERR_FILENO, again, sizeof(again) - 1);
		else
			(void)!write(STDERR_FILENO, first, sizeof(first) - 1);
	}
	errno = saved;
}

static int catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	/* Installed even where the shell had them ignored (a job started
	 * with & in a script): they are this program's way to stop a job. */
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) {
		err_msg(errno, "sigaction");
		return -1;
	}
	return 0;
}

/* The stdin copier: this program's stdin to the job, then EOF. */
static void *copy_stdin(void *arg)
{
	int fd = *(int *)arg;
	static char buf[64 * 1024];

	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* A closed stdin is an empty one. */
			if (errno != EBADF)
				err_msg(errno, "reading stdin");
			break;
		}
		if (n == 0)
			break;
		err = write_all(fd, buf, (size_t)n);
		if (err == EPIPE)
			return NULL;	/* every stdin rank ended */
		if (err) {
			err_msg(err, "writing stdin to the job");
			break;
		}
	}
	if (ioctl(fd, ZOID_JOB_IOC_EOF) < 0 && errno != EPIPE)
		err_msg(errno, "ending the job's stdin");
	return NULL;
}

static int start_stdin(int *fd)
{
	sigset_t block, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	/* The thread takes no SIGINT/SIGTERM (the main thread does). */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, copy_stdin, fd);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		err_msg(err, "starting the stdin copier");
	return err ? -1 : 0;
}

/* ---- run ---- */

/* Reads and handles the job's events until END; returns the exit status. */
static int follow(struct job *j)
{
	char *buf = malloc(READ_BUF);
	int status = -1;

	if (!buf) {
		err_msg(ENOMEM, "the event buffer");
		return 1;
	}
	while (status < 0) {
		ssize_t n = read(j->fd, buf, READ_BUF);
		size_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			sinks_flush();
			err_msg(errno, "reading job %u's events", j->id);
			return 1;
		}
		if (n == 0) {
			sinks_flush();
			err_msg(0, "job %u's events ended before its end", j->id);
			return 1;
		}
		while (off < (size_t)n) {
			struct zoid_job_event ev;

			if ((size_t)n - off < sizeof(ev))
				goto bad;
			memcpy(&ev, buf + off, sizeof(ev));
			off += sizeof(ev);
			if (ev.type == ZOID_JOB_EV_END) {
				status = ev.value >= 0 && ev.value <= 255 ? ev.value : 255;
				/* (Nothing follows END.) */
				break;
			}
			if (ev.rank >= j->ranks)
				goto bad;
			switch (ev.type) {
			case ZOID_JOB_EV_OUTPUT:
				if (ev.len > (size_t)n - off ||
				    (ev.stream != ZOID_JOB_STDOUT && ev.stream != ZOID_JOB_STDERR))
					goto bad;
				if (j->outdir)
					file_data(j, ev.rank, ev.stream, buf + off, ev.len);
				else
					tagged_data(j, ev.rank, ev.stream, buf + off, ev.len);
				off += ev.len;
				break;
			case ZOID_JOB_EV_EXIT:
			case ZOID_JOB_EV_FAILED:
				if (j->ended[ev.rank])
					goto bad;
				rank_done(j, ev.rank);
				if (ev.type == ZOID_JOB_EV_FAILED || ev.value) {
					/* Its lines before the message about it. */
					sinks_flush();
					rank_status(ev.rank, ev.type, ev.value);
				}
				break;
			default:
				goto bad;
			}
		}
		sinks_flush();
		continue;
bad:
		sinks_flush();
		err_msg(0, "job %u: a malformed event from the kernel (at byte %zu of %zd)",
			j->id, off, n);
		return 1;
	}
	/* Whatever a rank left unfinished. */
	for (uint32_t r = 0; r < j->ranks; r++)
		rank_done(j, r);
	sinks_flush();
	free(buf);
	if (status == 0 && output_lost)
		return 1;
	return status;
}

static int cmd_run(int argc, char **argv)
{
	enum { O_CNS = 256, O_LOCAL, O_UID, O_GID, O_ENV, O_CWD, O_STDIN, O_OUTPUT, O_STAGE };
	static const struct option opts[] = {
		{ "cns", required_argument, NULL, O_CNS },
		{ "local", required_argument, NULL, O_LOCAL },
		{ "uid", required_argument, NULL, O_UID },
		{ "gid", required_argument, NULL, O_GID },
		{ "env", required_argument, NULL, O_ENV },
		{ "cwd", required_argument, NULL, O_CWD },
		{ "stdin", required_argument, NULL, O_STDIN },
		{ "output", required_argument, NULL, O_OUTPUT },
		{ "stage", no_argument, NULL, O_STAGE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct zoid_job_run r = {
		.uid = ZOID_JOB_ID_DEFAULT, .gid = ZOID_JOB_ID_DEFAULT, .local_size = 1,
	};
	struct job j = { .fd = -1 };
	struct bytes spec = { 0 };
	uint16_t *cns = NULL;
	uint32_t ncns = 0, envc = 0;
	int stage = 0;
	const char *cwd = "", *stdin_mode = "0";
	char **envs = NULL;
	int verbose = 0, uid_given = 0, gid_given = 0, opt, zfd, status;
	long long v;

	envs = calloc((size_t)argc + 3, sizeof(*envs));
	if (!envs) {
		err_msg(ENOMEM, "options");
		return 1;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (opt) {
		case O_CNS:
			if (!strcmp(optarg, "all")) {
				free(cns);
				cns = NULL;
				ncns = 0;
			} else if (parse_cns(optarg, &cns, &ncns)) {
				return 2;
			}
			break;
		case O_LOCAL:
			v = number(optarg, ZOID_JOB_MAX_LOCAL);
			if (v < 1)
				return bad_usage("--local %s: 1 to 64 processes per CN", optarg);
			r.local_size = (uint32_t)v;
			break;
		case O_UID:
		case O_GID:
			v = number(optarg, 0xfffffffeULL);
			if (v < 0)
				return bad_usage("not a numeric id: %s", optarg);
			if (opt == O_UID) {
				r.uid = (uint32_t)v;
				uid_given = 1;
			} else {
				r.gid = (uint32_t)v;
				gid_given = 1;
			}
			break;
		case O_ENV:
			if (optarg[0] == '=' || !strchr(optarg, '='))
				return bad_usage("--env %s: not K=V", optarg);
			envs[envc++] = optarg;
			break;
		case O_CWD:
			cwd = optarg;
			break;
		case O_STDIN:
			if (strcmp(optarg, "none") && strcmp(optarg, "0") && strcmp(optarg, "all"))
				return bad_usage("--stdin %s: none, 0 or all", optarg);
			stdin_mode = optarg;
			break;
		case O_STAGE:
			stage = 1;
			break;
		case O_OUTPUT:
			j.outdir = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (optind >= argc || !argv[optind][0])
		return bad_usage("%s", "no program to run");
	if (uid_given && !gid_given) {
		char uid_s[16];

		v = passwd_gid(r.uid);
		if (v < 0) {
			snprintf(uid_s, sizeof(uid_s), "%u", r.uid);
			return bad_usage("--uid %s: not in /etc/passwd: give --gid too", uid_s);
		}
		r.gid = (uint32_t)v;
	}
	if (j.outdir) {
		struct stat sb;

		if (stat(j.outdir, &sb) < 0) {
			err_msg(errno, "%s", j.outdir);
			return 1;
		}
		if (!S_ISDIR(sb.st_mode)) {
			err_msg(ENOTDIR, "%s", j.outdir);
			return 1;
		}
	}

	/*
	 * The owner's HOME, USER and SHELL (unless --env gave them): its job
	 * scripts' environment (the ION runs $HOME/zoid-user-script.sh) and
	 * its ranks': from /etc/passwd, or for one's own job without an entry
	 * there, from the environment.
	 */
	{
		static char home[600], user[80], shell[300];
		uint32_t owner = uid_given ? r.uid : (uint32_t)getuid();
		struct pw pw;
		int have = !passwd_entry(owner, &pw);
		int own = owner == (uint32_t)getuid();
		const char *h = have ? pw.home : own ? getenv("HOME") : NULL;
		const char *u = have ? pw.name : own ? getenv("USER") : NULL;
		const char *sh = have ? pw.shell : own ? getenv("SHELL") : NULL;

		if (h && h[0] && !env_has(envs, envc, "HOME")) {
			snprintf(home, sizeof(home), "HOME=%s", h);
			envs[envc++] = home;
		}
		if (u && u[0] && !env_has(envs, envc, "USER")) {
			snprintf(user, sizeof(user), "USER=%s", u);
			envs[envc++] = user;
		}
		if (sh && sh[0] && !env_has(envs, envc, "SHELL")) {
			snprintf(shell, sizeof(shell), "SHELL=%s", sh);
			envs[envc++] = shell;
		}
	}

	/* The spec block. */
	{
		uint32_t hdr[2] = { (uint32_t)(argc - optind), envc };

		bytes_put(&spec, hdr, sizeof(hdr));
		bytes_str(&spec, cwd);
		for (int i = optind; i < argc; i++)
			bytes_str(&spec, argv[i]);
		for (uint32_t i = 0; i < envc; i++)
			bytes_str(&spec, envs[i]);
	}
	if (spec.len > ZOID_JOB_MAX_SPEC) {
		err_msg(E2BIG, "the job's arguments and environment (%zu bytes, at most %d)",
			spec.len, ZOID_JOB_MAX_SPEC);
		return 1;
	}
	r.spec = (uint64_t)(uintptr_t)spec.p;
	r.spec_len = (uint32_t)spec.len;
	r.cns = (uint64_t)(uintptr_t)cns;
	r.ncns = ncns;
	if (!strcmp(stdin_mode, "all"))
		r.flags |= ZOID_JOB_STDIN_ALL;

	zfd = open_zoid();
	if (zfd < 0)
		return 1;
	if (stage) {
		/*
		 * ZeptoOS's pre-staging: the program goes to the same path on
		 * the job's CNs first, by f2cn broadcast (CAP_SYS_ADMIN).
		 */
		struct zoid_ioc_f2cn f = { .mode = ZOID_F2CN_MODE_KEEP, .failed_node = 0xffff };
		const char *path = argv[optind];
		int fd;

		if (path[0] != '/')
			return bad_usage("--stage %s: the program must be an absolute path", path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err_msg(errno, "--stage %s", path);
			return 1;
		}
		f.fd = fd;
		f.path = (uint64_t)(uintptr_t)path;
		f.nodes = (uint64_t)(uintptr_t)cns;
		f.nnodes = ncns;
		if (ioctl(zfd, ZOID_IOC_F2CN, &f) < 0) {
			int err = errno;

			if (f.failed_node != 0xffff)
				err_msg(err, "--stage %s: CN %u", path, f.failed_node);
			else
				err_msg(err, "--stage %s", path);
			return 1;
		}
		close(fd);
		if (verbose)
			fprintf(stderr, "zoid-job: staged %s (%llu bytes) on %u CNs\n", path,
				(unsigned long long)f.bytes, f.cns);
	}
	if (ioctl(zfd, ZOID_IOC_JOB_RUN, &r) < 0) {
		int err = errno;

		if (err == EPERM && (uid_given || gid_given))
			err_msg(err, "starting %s as uid %u gid %u", argv[optind], r.uid, r.gid);
		else
			err_msg(err, "starting %s", argv[optind]);
		return 1;
	}
	close(zfd);
	free(spec.p);
	free(cns);
	free(envs);
	j.id = r.job_id;
	j.ranks = r.global_size;
	j.fd = r.fd;
	job_fd = j.fd;
	if (catch_signals())
		return 1;	/* (the exit closes the job: its ranks are killed) */
	if (verbose)
		err_msg(0, "job %u, %u ranks", j.id, j.ranks);

	j.st = calloc(j.ranks ? j.ranks : 1, 2 * sizeof(*j.st));
	j.ended = calloc(j.ranks ? j.ranks : 1, 1);
	if (!j.st || !j.ended) {
		err_msg(ENOMEM, "job %u's %u ranks", j.id, j.ranks);
		return 1;
	}
	for (uint32_t i = 0; i < 2 * j.ranks; i++)
		j.st[i].fd = -1;
	if (j.outdir) {
		/* Two files per rank may be open at once. */
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}

	if (!strcmp(stdin_mode, "none")) {
		if (ioctl(j.fd, ZOID_JOB_IOC_EOF) < 0 && errno != EPIPE)
			err_msg(errno, "ending the job's stdin");
	} else if (start_stdin(&j.fd)) {
		/* The ranks must not wait for input that cannot come. */
		if (ioctl(j.fd, ZOID_JOB_IOC_EOF) < 0 && errno != EPIPE)
			err_msg(errno, "ending the job's stdin");
	}

	status = follow(&j);
	/* exit(), not a return to a joined thread: the stdin copier may be
	 * blocked on a terminal that has nothing more to say. */
	exit(status);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };

	if (argc < 2)
		return usage(stderr, 2);
	/* Output nobody reads any more (`zoid-job run ... | head`) ends this
	 * program as it does any other, even where SIGPIPE was inherited
	 * ignored, and the job with it (its descriptor's close kills its
	 * ranks). */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "kill"))
		return cmd_kill(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return cmd_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout, 0);
	return usage(stderr, 2);
}
