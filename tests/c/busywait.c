/*
 * Nothing spins while nothing can be done. Each case measures this
 * process's CPU time (getrusage: every thread, the progress thread
 * included) over WINDOW seconds and wants less than 5% of one core:
 *
 *   sread:   a receiver blocks in fi_cq_sread (manual progress) while its
 *            unexpected-message space is full (a small
 *            FI_SOCKETS_MAX_UNEXP_SZ, filled by a raw peer that keeps
 *            more frames waiting in the socket);
 *   auto:    the same flood with FI_PROGRESS_AUTO, while the application
 *            computes without calling the library (here: sleeps);
 *   emfile:  connections wait in the listener's backlog while accept
 *            fails with EMFILE (RLIMIT_NOFILE lowered to the descriptors
 *            in use), the receiver blocked in fi_cq_sread.
 *
 * A child process is the raw peer. Every wait is bounded.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include "check.h"
#include "side.h"

#define WINDOW 3.0
#define MAX_SHARE 0.05
#define MSG_CQ ((struct fi_cq_attr){ .format = FI_CQ_FORMAT_MSG, .size = 64, .wait_obj = FI_WAIT_UNSPEC })

static double cpu_seconds(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double) (u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double) (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/*
 * The raw peer (a child): `flood` connects once and writes zero-length
 * message frames until held back for 300 ms, then says 'f'; `conns`
 * opens that many connections and says 'c'. It then waits for any byte
 * from the parent (or its end) and exits.
 */
static void peer(const struct sockaddr_in *to, int flood, int conns, int rd, int wr)
{
	static uint8_t batch[40 * 1024];
	int s[64];
	for (int i = 0; i < 1024; i++) {
		batch[40 * i] = 1;
		batch[40 * i + 1] = 2;
	}
	if (flood) {
		s[0] = socket(AF_INET, SOCK_STREAM, 0);
		if (s[0] < 0 || connect(s[0], (const struct sockaddr *) to, sizeof(*to)))
			_exit(3);
		fcntl(s[0], F_SETFL, O_NONBLOCK);
		double end = now() + 30;
		while (now() < end) {
			ssize_t n = send(s[0], batch, sizeof(batch) - sizeof(batch) % 40, MSG_NOSIGNAL);
			if (n > 0 && n % 40) {
				/* Complete the partial frame before going on. */
				struct pollfd p = { .fd = s[0], .events = POLLOUT };
				size_t left = 40 - (size_t) (n % 40);
				while (left && poll(&p, 1, 1000) == 1) {
					ssize_t k = send(s[0], batch + 40 - left, left, MSG_NOSIGNAL);
					if (k > 0)
						left -= (size_t) k;
				}
			}
			if (n < 0) {
				struct pollfd p = { .fd = s[0], .events = POLLOUT };
				if (poll(&p, 1, 300) == 0)
					break;
			}
		}
		if (write(wr, "f", 1) != 1)
			_exit(4);
	}
	for (int i = 0; i < conns && i < 64; i++) {
		s[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (s[i] < 0 || connect(s[i], (const struct sockaddr *) to, sizeof(*to)))
			_exit(5);
	}
	if (conns && write(wr, "c", 1) != 1)
		_exit(4);
	char c;
	struct pollfd p = { .fd = rd, .events = POLLIN };
	(void) poll(&p, 1, 60000);
	(void) !read(rd, &c, 1);
	_exit(0);
}

struct child {
	pid_t pid;
	int rd, wr;
};

static struct child spawn(const struct sockaddr_in *to, int flood, int conns)
{
	int down[2], up[2];
	struct child c = { 0 };
	if (pipe(down) || pipe(up))
		exit(1);
	c.pid = fork();
	if (c.pid == 0) {
		close(down[1]);
		close(up[0]);
		peer(to, flood, conns, down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	c.rd = up[0];
	c.wr = down[1];
	return c;
}

/* Drives `s` (when given) until the child writes `mark`. */
static int await(struct child *c, struct side *s, char mark)
{
	struct fi_cq_msg_entry e;
	struct pollfd p = { .fd = c->rd, .events = POLLIN };
	double end = now() + 30;
	while (now() < end) {
		if (s)
			(void) fi_cq_read(s->cq, &e, 1);
		if (poll(&p, 1, s ? 0 : 100) == 1) {
			char got = 0;
			return read(c->rd, &got, 1) == 1 && got == mark;
		}
	}
	return 0;
}

static void finish(struct child *c)
{
	int status;
	(void) !write(c->wr, "x", 1);
	waitpid(c->pid, &status, 0);
	close(c->rd);
	close(c->wr);
}

static void report(const char *what, double cpu, double wall)
{
	printf("%s: %.1f ms CPU over %.2f s (%.2f%% of a core)\n", what, cpu * 1e3, wall, 100 * cpu / wall);
	EXPECT(cpu < MAX_SHARE * wall, "%s: %.1f%% of a core while nothing can be done (want < %.0f%%)", what,
	       100 * cpu / wall, 100 * MAX_SHARE);
}

/* Blocks in fi_cq_sread for WINDOW seconds; returns CPU seconds used. */
static double sread_window(struct side *s, double *wall)
{
	struct fi_cq_msg_entry e;
	double c0 = cpu_seconds(), t0 = now();
	ssize_t n = fi_cq_sread(s->cq, &e, 1, NULL, (int) (WINDOW * 1000));
	*wall = now() - t0;
	EXPECT(n == -FI_EAGAIN, "fi_cq_sread returned %zd with no receive posted", n);
	return cpu_seconds() - c0;
}

static void case_flood(enum fi_progress progress)
{
	struct side s;
	struct sockaddr_in me;
	size_t len = sizeof(me);
	const char *what = progress == FI_PROGRESS_AUTO ? "auto progress, application computing" :
							 "fi_cq_sread, unexpected space full";
	open_side(&s, FI_MSG, progress, "127.0.0.1", FI_SOURCE, MSG_CQ);
	CHECK(fi_getname(&s.ep->fid, &me, &len));
	struct child c = spawn(&me, 1, 0);
	EXPECT(await(&c, progress == FI_PROGRESS_AUTO ? NULL : &s, 'f'), "%s: the flood never filled the space",
	       what);
	double wall, cpu;
	if (progress == FI_PROGRESS_AUTO) {
		double c0 = cpu_seconds(), t0 = now();
		struct timespec ts = { (time_t) WINDOW, 0 };
		nanosleep(&ts, NULL);
		wall = now() - t0;
		cpu = cpu_seconds() - c0;
	} else {
		cpu = sread_window(&s, &wall);
	}
	report(what, cpu, wall);
	finish(&c);
	close_side(&s);
}

static void case_emfile(void)
{
	struct side s;
	struct sockaddr_in me;
	size_t len = sizeof(me);
	open_side(&s, FI_MSG, FI_PROGRESS_MANUAL, "127.0.0.1", FI_SOURCE, MSG_CQ);
	CHECK(fi_getname(&s.ep->fid, &me, &len));
	struct child c = spawn(&me, 0, 8);
	/* No descriptor left: the lowest free one becomes the limit. */
	int probe = dup(0);
	struct rlimit old, lim;
	getrlimit(RLIMIT_NOFILE, &old);
	lim = old;
	lim.rlim_cur = (rlim_t) probe;
	close(probe);
	EXPECT(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit: %s", strerror(errno));
	EXPECT(await(&c, NULL, 'c'), "emfile: the peer could not connect");
	double wall, cpu = sread_window(&s, &wall);
	report("fi_cq_sread, accept failing with EMFILE", cpu, wall);
	setrlimit(RLIMIT_NOFILE, &old);
	finish(&c);
	close_side(&s);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	if (!getenv("FI_SOCKETS_MAX_UNEXP_SZ")) {
		printf("FAIL: set FI_SOCKETS_MAX_UNEXP_SZ\n");
		return 1;
	}
	if (!strcmp(which, "all") || !strcmp(which, "sread"))
		case_flood(FI_PROGRESS_MANUAL);
	if (!strcmp(which, "all") || !strcmp(which, "auto"))
		case_flood(FI_PROGRESS_AUTO);
	if (!strcmp(which, "all") || !strcmp(which, "emfile"))
		case_emfile();
	printf("busywait: %s\n", failures ? "FAILED" : "no busy waits");
	return failures ? 1 : 0;
}
