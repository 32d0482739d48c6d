/*
 * A peer that scribbles over the shared memory while real traffic runs
 * (tests/shm/t-scribblepeer.sh): the endpoint under test must stay inside
 * its own memory and keep answering, whatever the peer writes.
 *
 * `scribblepeer victim`: opens an RDM endpoint of shm (manual progress),
 * starts this program again as `scribblepeer scribbler` (fork, then exec:
 * under valgrind the victim runs under memcheck while the scribbler runs
 * natively), swaps names with it over two pipes, then for DURATION
 * seconds sends messages of sizes from 8 B to 1 MiB to it (every path a
 * message takes: one cell, several cells, the bounce area, cross-memory
 * rendezvous and its shared copy), keeps RECVS receives of 1 MiB posted,
 * and reads its CQ, counting what completes and what fails. It never
 * waits on one operation. It closes everything at the end (operations
 * still in flight included), reaps the scribbler, and prints
 * "victim: ..." counts; it exits 0 unless a libfabric call it makes
 * returns an error it does not expect.
 *
 * `scribblepeer scribbler READ_FD WRITE_FD`: the same traffic towards the
 * victim, while a second thread writes random words, and small ones
 * that look like counts, indexes and lengths, at random places in every
 * shared mapping of this process that a same-host provider uses: ours
 * (`memfd:oxifabric-shm`, its ring and the victim's, bounce area and
 * slots included; not its life page) and upstream's (`/dev/shm/...`). It
 * ends itself after DURATION + 1 seconds. Its writes go through
 * process_vm_writev to itself, so that a mapping dropped between two looks
 * at /proc/self/maps fails a write instead of killing it.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "../c/check.h"
#include "shm_ep.h"

#define DURATION 4.0
#define BUF (1u << 20)
#define RECVS 4
#define SENDS 64
/* The scribbler's rhythm: BURSTS times 16 words (100 us apart), then
 * QUIET_MS of quiet. */
#define BURSTS 20
#define QUIET_MS 100


static void open_ep(void)
{
	shm_open_ep(shm_hints(FI_MSG), FI_CQ_FORMAT_MSG, 256);
}

struct counts {
	long sent, send_err, recvd, recv_err, again;
};

/* Sends and receives towards `to` until `end`, never waiting on one
 * operation; tolerates every error completion (the peer scribbles). */
static void traffic(fi_addr_t to, double end, struct counts *c, int strict)
{
	static const size_t sizes[] = { 8, 3000, 20000, 70000, 300000, BUF };
	static char rbuf[RECVS][BUF], sbuf[BUF];
	static struct fi_context rctx[RECVS];
	int in_flight = 0;
	size_t next = 0;
	memset(sbuf, 0x5a, sizeof(sbuf));
	memset(rbuf, 0, sizeof(rbuf));
	for (int i = 0; i < RECVS; i++)
		CHECK(fi_recv(ep, rbuf[i], BUF, NULL, FI_ADDR_UNSPEC, &rctx[i]));
	while (now() < end) {
		if (in_flight < SENDS) {
			/* Every other message injected (small ones: nothing to
			 * wait for), so that sends a scribbled peer never
			 * answers do not stop the traffic. */
			size_t n = sizes[next % 6];
			int inject = next % 2 == 0 && n <= info->tx_attr->inject_size;
			ssize_t rc = inject ? fi_inject(ep, sbuf, n, to) : fi_send(ep, sbuf, n, NULL, to, NULL);
			if (rc == 0) {
				in_flight += !inject;
				c->sent += inject;
				next++;
			} else if (rc == -FI_EAGAIN) {
				c->again++;
			} else if (strict) {
				die("fi_send", rc);
			}
		}
		struct fi_cq_msg_entry e[16];
		ssize_t n = fi_cq_read(cq, e, 16);
		struct fi_cq_err_entry err = { 0 };
		if (n == -FI_EAVAIL) {
			if (fi_cq_readerr(cq, &err, 0) != 1)
				continue;
			if (getenv("SP_DEBUG") && c->send_err + c->recv_err < 3)
				fprintf(stderr, "error entry: %s flags %llx\n", fi_strerror(err.err), (unsigned long long) err.flags);
			e[0].op_context = err.op_context;
			e[0].flags = err.flags;
			n = 1;
		} else if (n < 0) {
			if (n != -FI_EAGAIN && strict)
				die("fi_cq_read", n);
			continue;
		}
		for (ssize_t k = 0; k < n; k++) {
			if (e[k].flags & FI_RECV) {
				err.err ? c->recv_err++ : c->recvd++;
				struct fi_context *x = e[k].op_context;
				if (x >= rctx && x < rctx + RECVS) {
					ssize_t rc = fi_recv(ep, rbuf[x - rctx], BUF, NULL, FI_ADDR_UNSPEC, x);
					if (rc && strict)
						die("fi_recv", rc);
				}
			} else {
				err.err ? c->send_err++ : c->sent++;
				in_flight--;
			}
		}
	}
}

/* The scribbling thread: random words over every shared mapping of a
 * same-host provider, in short bursts, until the process ends. */
struct span {
	uintptr_t start, end;
};

/* What the scribbling thread did: words written, most mappings seen. */
static volatile long scribbled, mappings;

static void *scribble(void *arg)
{
	(void) arg;
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t) getpid();
	for (;;) {
		struct span spans[64];
		int ns = 0;
		char line[512];
		FILE *m = fopen("/proc/self/maps", "r");
		if (!m)
			return NULL;
		while (ns < 64 && fgets(line, sizeof(line), m)) {
			unsigned long a, b;
			char perms[8];
			if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3 || strcmp(perms, "rw-s") != 0)
				continue;
			int ours = strstr(line, "memfd:oxifabric-shm") && !strstr(line, "-life");
			if (ours || strstr(line, "/dev/shm/"))
				spans[ns++] = (struct span) { a, b };
		}
		fclose(m);
		if (ns > mappings)
			mappings = ns;
		/* A burst of scribbling every QUIET_MS: traffic flows between
		 * them. */
		usleep(QUIET_MS * 1000);
		for (int burst = 0; burst < BURSTS && ns > 0; burst++) {
			for (int i = 0; i < 16; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				struct span s = spans[x % (uint64_t) ns];
				uintptr_t at = (s.start + (uintptr_t) ((x >> 8) % (s.end - s.start))) & ~(uintptr_t) 7;
				uint64_t v = (i % 3 == 0) ? x : (i % 3 == 1) ? (x >> 54) : (x >> 40) & 0xffff;
				/* Through the kernel: a mapping that went since the
				 * last look at /proc/self/maps (a peer dropped) is
				 * an error, not a crash. */
				struct iovec lo = { &v, sizeof(v) }, re = { (void *) at, sizeof(v) };
				if (process_vm_writev(getpid(), &lo, 1, &re, 1, 0) == sizeof(v))
					scribbled++;
			}
			usleep(100);
		}
	}
	return NULL;
}

static int scribbler(int rd, int wr)
{
	struct counts c = { 0 };
	pthread_t t;
	open_ep();
	fi_addr_t to = shm_swap_names(rd, wr);
	alarm((unsigned) DURATION + 2);
	if (pthread_create(&t, NULL, scribble, NULL))
		die("pthread_create", -FI_ENOMEM);
	traffic(to, now() + DURATION + 1, &c, 0);
	printf("scribbler: %ld words written into %ld shared mappings; %ld sent, %ld send errors (the victim closes "
	       "first), %ld received, %ld receive errors\n",
	       scribbled, mappings, c.sent, c.send_err, c.recvd, c.recv_err);
	fflush(stdout);
	_exit(0); /* its own memory is scribbled over: no orderly close */
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "scribbler") == 0)
		return scribbler(atoi(argv[2]), atoi(argv[3]));
	if (argc != 2 || strcmp(argv[1], "victim") != 0) {
		fprintf(stderr, "usage: %s victim\n", argv[0]);
		return 2;
	}
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		die("pipe", -FI_EIO);
	pid_t kid = fork();
	if (kid == 0) {
		char r[16], w[16];
		snprintf(r, sizeof(r), "%d", down[0]);
		snprintf(w, sizeof(w), "%d", up[1]);
		execl(argv[0], argv[0], "scribbler", r, w, (char *) NULL);
		_exit(127);
	}
	struct counts c = { 0 };
	open_ep();
	fi_addr_t to = shm_swap_names(up[0], down[1]);
	traffic(to, now() + DURATION, &c, 1);
	shm_close_ep();
	int st = 0;
	waitpid(kid, &st, 0);
	printf("victim: %ld sent, %ld send errors, %ld received, %ld receive errors, %ld EAGAIN; scribbler status %d\n",
	       c.sent, c.send_err, c.recvd, c.recv_err, c.again, st);
	return 0;
}
