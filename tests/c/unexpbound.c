/*
 * Messages that arrive before their receive are held in bounded memory,
 * empty ones included: every message counts a fixed charge on top of its
 * payload against FI_SOCKETS_MAX_UNEXP_SZ (set small by t-unexpbound.sh).
 *
 * The receiver (this process) opens an RDM endpoint and a child process
 * floods it twice:
 *   A. a raw TCP peer writes RAW_N zero-length message frames;
 *   B. a libfabric peer sends LEGIT_N 0-byte tagged messages (fi_tinject,
 *      retrying on -FI_EAGAIN).
 * In each phase the receiver first only drives progress, posting no
 * receive, until the sender is held back by flow control; its resident
 * memory must then have grown by less than the bound (plus SLACK for
 * buffers that do not depend on the message count). Then it posts
 * receives and takes every message, its memory staying bounded
 * throughout. Every wait is bounded.
 *
 * `unexpbound inject`: the other direction. A peer that answers the
 * handshake and then never reads gets 4 KiB injects until the sender says
 * -FI_EAGAIN; the sender's memory must grow by less than
 * FI_SOCKETS_MAX_INJECT_QUEUE_SZ plus SLACK.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "side.h"

#define SLACK (6u << 20)
#define POSTED 512
#define TAGGED_CQ ((struct fi_cq_attr){ .format = FI_CQ_FORMAT_TAGGED, .size = 4096 })

static long raw_n = 10000000, legit_n = 2000000;

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

/* ---- the child: the two senders ---- */

static void child(int rd, int wr)
{
	struct sockaddr_in to;
	if (read(rd, &to, sizeof(to)) != sizeof(to))
		_exit(2);
	/* A. raw frames: version 1, op 2 (message), everything else zero. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *) &to, sizeof(to)))
		_exit(3);
	fcntl(s, F_SETFL, O_NONBLOCK);
	static uint8_t batch[40 * 4096];
	memset(batch, 0, sizeof(batch));
	for (int i = 0; i < 4096; i++) {
		batch[40 * i] = 1;
		batch[40 * i + 1] = 2;
	}
	uint64_t total = (uint64_t) raw_n * 40, sent = 0;
	int told = 0;
	double end = now() + 100;
	while (sent < total && now() < end) {
		size_t off = (size_t) (sent % sizeof(batch));
		size_t k = sizeof(batch) - off;
		if (k > total - sent)
			k = (size_t) (total - sent);
		ssize_t n = send(s, batch + off, k, MSG_NOSIGNAL);
		if (n > 0) {
			sent += (uint64_t) n;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			_exit(4);
		struct pollfd p = { .fd = s, .events = POLLOUT };
		if (poll(&p, 1, 300) == 0 && !told) {
			/* Held back for 300 ms: the receiver stopped reading. */
			told = 1;
			if (write(wr, "a", 1) != 1)
				_exit(5);
		}
	}
	if (!told && write(wr, "a", 1) != 1)
		_exit(5);
	close(s);
	if (sent < total)
		_exit(6);

	/* B. a libfabric peer: 0-byte tagged injects. */
	struct side c;
	open_side(&c, FI_TAGGED | FI_MSG, FI_PROGRESS_MANUAL, NULL, 0, TAGGED_CQ);
	fi_addr_t dest;
	if (fi_av_insert(c.av, &to, 1, &dest, 0, NULL) != 1)
		_exit(7);
	struct fi_cq_tagged_entry e[64];
	told = 0;
	double stuck = 0;
	end = now() + 100;
	for (long i = 0; i < legit_n && now() < end;) {
		ssize_t rc = fi_tinject(c.ep, NULL, 0, dest, 5);
		if (rc == 0) {
			i++;
			stuck = 0;
			continue;
		}
		if (rc != -FI_EAGAIN)
			_exit(8);
		(void) fi_cq_read(c.cq, e, 64);
		if (stuck == 0)
			stuck = now();
		else if (!told && now() - stuck > 0.3) {
			told = 1;
			if (write(wr, "b", 1) != 1)
				_exit(5);
		}
	}
	if (!told && write(wr, "b", 1) != 1)
		_exit(5);
	/* Keep progressing until the receiver has everything and says so. */
	struct pollfd p = { .fd = rd, .events = POLLIN };
	end = now() + 100;
	while (poll(&p, 1, 0) == 0 && now() < end)
		(void) fi_cq_read(c.cq, e, 64);
	_exit(0);
}

/* ---- the receiver ---- */

static struct side r;
static long peak;

static void sample(void)
{
	long v = rss_bytes();
	if (v > peak)
		peak = v;
}

/* Drives progress, posting nothing, until the child writes `mark`. */
static void fill(int rd, char mark, const char *what)
{
	struct fi_cq_tagged_entry e[64];
	struct pollfd p = { .fd = rd, .events = POLLIN };
	double end = now() + 60;
	char c = 0;
	while (now() < end) {
		ssize_t n = fi_cq_read(r.cq, e, 64);
		EXPECT(n == -FI_EAGAIN, "%s: completion %zd with no receive posted", what, n);
		sample();
		if (poll(&p, 1, 0) == 1) {
			if (read(rd, &c, 1) != 1)
				c = 0;
			break;
		}
	}
	EXPECT(c == mark, "%s: the sender was never held back", what);
	/* A little more progress: whatever still arrives must be bounded too. */
	for (double t = now() + 0.2; now() < t;) {
		(void) fi_cq_read(r.cq, e, 64);
		sample();
	}
}

/* Posts receives and takes `count` messages. */
static void drain(long count, int tagged, const char *what)
{
	struct fi_cq_tagged_entry e[64];
	long posted = 0, got = 0, errors = 0;
	double end = now() + 100;
	while (got < count && now() < end) {
		while (posted - got < POSTED && posted < count) {
			ssize_t rc = tagged ? fi_trecv(r.ep, NULL, 0, NULL, FI_ADDR_UNSPEC, 5, 0, NULL)
					    : fi_recv(r.ep, NULL, 0, NULL, FI_ADDR_UNSPEC, NULL);
			if (rc == -FI_EAGAIN)
				break;
			if (rc)
				die("posting a receive", rc);
			posted++;
		}
		ssize_t n = fi_cq_read(r.cq, e, 64);
		if (n > 0)
			got += n;
		else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(r.cq, &err, 0);
			errors++;
			got++;
		}
		if ((got & 0xffff) == 0)
			sample();
	}
	sample();
	EXPECT(got == count && errors == 0, "%s: received %ld of %ld messages (%ld errors)", what, got, count,
	       errors);
}

/* A peer that completes the handshake and then never reads. */
static int inject_mode(void)
{
	const char *b = getenv("FI_SOCKETS_MAX_INJECT_QUEUE_SZ");
	long bound = b ? atol(b) : 0;
	if (bound <= 0) {
		printf("FAIL: set FI_SOCKETS_MAX_INJECT_QUEUE_SZ\n");
		return 1;
	}
	struct sockaddr_in x = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t xl = sizeof(x);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *) &x, sizeof(x)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *) &x, &xl))
		die("listen", -FI_EIO);
	fcntl(l, F_SETFL, O_NONBLOCK);
	open_side(&r, FI_TAGGED | FI_MSG, FI_PROGRESS_MANUAL, NULL, 0, TAGGED_CQ);
	fi_addr_t dest;
	if (fi_av_insert(r.av, &x, 1, &dest, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	static char msg[4096];
	struct fi_cq_tagged_entry e[64];
	for (int i = 0; i < 100; i++)
		(void) fi_cq_read(r.cq, e, 64);
	long base = rss_bytes();
	peak = base;
	int s = -1, acked = 0;
	long sent = 0;
	uint8_t h[40];
	size_t hgot = 0;
	double stuck = 0, end = now() + 30;
	while (now() < end) {
		ssize_t rc = fi_inject(r.ep, msg, sizeof(msg), dest);
		(void) fi_cq_read(r.cq, e, 64);
		sample();
		if (s < 0)
			s = accept(l, NULL, NULL);
		if (s >= 0 && !acked) {
			/* Read the Hello's header and payload, answer HelloAck. */
			ssize_t n = recv(s, h + hgot, 40 - hgot, MSG_DONTWAIT);
			if (n > 0 && (hgot += (size_t) n) == 40) {
				uint8_t skip[256];
				size_t plen = h[8] | (size_t) h[9] << 8;
				if (plen > sizeof(skip) || recv(s, skip, plen, MSG_WAITALL) != (ssize_t) plen)
					die("reading the hello", -FI_EIO);
				memset(h, 0, 40);
				h[0] = 1;
				h[1] = 8;
				if (send(s, h, 40, MSG_NOSIGNAL) != 40)
					die("answering the hello", -FI_EIO);
				acked = 1;
			}
		}
		if (rc == 0) {
			sent++;
			stuck = 0;
		} else if (rc != -FI_EAGAIN) {
			die("fi_inject", rc);
		} else if (stuck == 0) {
			stuck = now();
		} else if (now() - stuck > 0.5) {
			break;
		}
	}
	long grow = peak - base;
	printf("inject bound %ld KiB: %ld injects of 4 KiB accepted before -FI_EAGAIN, memory grew by %ld KiB\n",
	       bound >> 10, sent, grow >> 10);
	EXPECT(acked, "the handshake did not happen");
	EXPECT(stuck != 0, "the sender never said -FI_EAGAIN (%ld injects accepted)", sent);
	EXPECT(grow < bound + (long) SLACK, "memory grew by %ld KiB, bound %ld KiB", grow >> 10, bound >> 10);
	if (s >= 0)
		close(s);
	close(l);
	close_side(&r);
	printf("unexpbound inject: %s\n", failures ? "FAILED" : "memory stayed within the bound");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "inject"))
		return inject_mode();
	if (argc > 2) {
		raw_n = atol(argv[1]);
		legit_n = atol(argv[2]);
	}
	const char *b = getenv("FI_SOCKETS_MAX_UNEXP_SZ");
	long bound = b ? atol(b) : 0;
	if (bound <= 0) {
		printf("FAIL: set FI_SOCKETS_MAX_UNEXP_SZ\n");
		return 1;
	}
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		child(down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	open_side(&r, FI_TAGGED | FI_MSG, FI_PROGRESS_MANUAL, "127.0.0.1", FI_SOURCE, TAGGED_CQ);
	struct sockaddr_in me;
	size_t len = sizeof(me);
	CHECK(fi_getname(&r.ep->fid, &me, &len));
	/* Warm up the receive path so that its fixed buffers are counted in
	 * the baseline. */
	struct fi_cq_tagged_entry e[64];
	for (int i = 0; i < 100; i++)
		(void) fi_cq_read(r.cq, e, 64);
	long base = rss_bytes();
	if (write(down[1], &me, sizeof(me)) != sizeof(me))
		return 1;
	double t0 = now();

	peak = base;
	fill(up[0], 'a', "raw zero-length frames");
	long held_a = peak - base;
	drain(raw_n, 0, "raw zero-length frames");
	long grow_a = peak - base;
	double t1 = now();

	peak = rss_bytes();
	long base_b = peak;
	fill(up[0], 'b', "0-byte tagged messages");
	long held_b = peak - base_b;
	drain(legit_n, 1, "0-byte tagged messages");
	long grow_b = peak - base;
	double t2 = now();
	if (write(down[1], "x", 1) != 1)
		failures++;
	int status = 0;
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the sender exited with status %d", status);

	printf("bound %ld KiB: %ld raw frames: held %ld KiB while paused, peak growth %ld KiB, %.1f s\n",
	       bound >> 10, raw_n, held_a >> 10, grow_a >> 10, t1 - t0);
	printf("bound %ld KiB: %ld 0-byte messages: held %ld KiB while paused, peak growth %ld KiB, %.1f s\n",
	       bound >> 10, legit_n, held_b >> 10, grow_b >> 10, t2 - t1);
	EXPECT(held_a < bound + (long) SLACK && grow_a < bound + (long) SLACK,
	       "raw frames: resident memory grew by %ld KiB, bound %ld KiB", grow_a >> 10, bound >> 10);
	EXPECT(held_b < bound + (long) SLACK && grow_b < bound + (long) SLACK,
	       "0-byte messages: resident memory grew by %ld KiB, bound %ld KiB", grow_b >> 10, bound >> 10);
	close_side(&r);
	printf("unexpbound: %s\n", failures ? "FAILED" : "memory stayed within the bound");
	return failures ? 1 : 0;
}
