/*
 * The descriptor fi_control(FI_GETWAIT) gives for a CQ becomes readable
 * when a message arrives for an endpoint bound to it, with manual progress.
 *
 * fi_cq(3) and fi_poll(3): an application may take a CQ's wait descriptor
 * (FI_WAIT_FD), call fi_trywait, and when it says the caller may block,
 * sleep in poll()/epoll on that descriptor; it is woken when the CQ may
 * have something, then reads the CQ. With FI_PROGRESS_MANUAL no provider
 * thread moves data meanwhile, so the descriptor has to report what
 * arrives on the endpoints' connections, not only entries already queued:
 * otherwise the application sleeps for ever on a message that is there.
 * This is how event-driven runtimes (Mercury, for one) wait.
 *
 * Two RDM endpoints A and B in one thread-safe domain of one process,
 * manual progress, FI_WAIT_FD CQs; A's descriptor is taken right after
 * its CQ is opened, before the endpoint is bound. After a warm-up exchange (polling),
 * each of 3 rounds: post a receive on A, fi_trywait on A's CQ until it
 * says 0, then a helper thread sends B->A 50 ms later while the main
 * thread sleeps in poll() on A's descriptor. poll() must report it
 * readable within 2 s of the send, and fi_cq_read on A's CQ must then
 * return the message (data checked) within 100 ms.
 * Usage: getwait [PROVIDER] (default sockets).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "pair.h"

#define ROUNDS 3
#define DELAY_MS 50
#define POLL_LIMIT_MS 2000
#define READ_LIMIT_MS 100

static struct side a, b;
static uint64_t out_value;
static double sent_at;

/* Reads A's and B's CQs until `na` and `nb` completions came (manual
 * progress: the connection's setup needs both sides driven), for at most
 * 10 s; an error completion fails. */
static int reap_both(int na, int nb, const char *what)
{
	double end = now_ms() + 10000;
	while ((na > 0 || nb > 0) && now_ms() < end) {
		struct fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(a.cq, &e, 1);
		if (r == 1)
			na--;
		else if (r != -FI_EAGAIN)
			break;
		r = fi_cq_read(b.cq, &e, 1);
		if (r == 1)
			nb--;
		else if (r != -FI_EAGAIN)
			break;
	}
	if (na > 0 || nb > 0)
		printf("FAIL %s: completions missing (A %d, B %d) after 10 s or an error\n", what, na, nb);
	return na > 0 || nb > 0 ? -1 : 0;
}

/* Posts a tagged send or receive of the 8 bytes at `v` on `s`, retrying
 * while the provider asks for it (reading `s`'s CQ, and the other side's
 * when `both`: a connection still being set up), for at most 10 s. */
static void post_u64(int send, struct side *s, uint64_t *v, int both)
{
	double end = now_ms() + 10000;
	for (;;) {
		ssize_t r = send ? fi_tsend(s->ep, v, sizeof(*v), NULL, s->peer, 7, NULL)
				 : fi_trecv(s->ep, v, sizeof(*v), NULL, s->peer, 7, 0, NULL);
		if (r == 0)
			return;
		if (r != -FI_EAGAIN || now_ms() > end) {
			printf("FAIL %s: %zd (%s)\n", send ? "fi_tsend" : "fi_trecv", r, fi_strerror((int) -r));
			exit(1);
		}
		struct fi_cq_tagged_entry e;
		(void) fi_cq_read(s->cq, &e, 1);
		if (both)
			(void) fi_cq_read((s == &a ? &b : &a)->cq, &e, 1);
	}
}

/* B sends `out_value` to A after DELAY_MS, then reaps its send. */
static void *sender(void *arg)
{
	(void) arg;
	usleep(DELAY_MS * 1000);
	sent_at = now_ms();
	post_u64(1, &b, &out_value, 0);
	if (reap(b.cq, 1, "send completion"))
		exit(1);
	return NULL;
}

static int fd = -1;

/* A's descriptor is taken as soon as its CQ exists, before its endpoint is
 * bound (the endpoint comes to the descriptor later). */
static void take_descriptor(struct side *s)
{
	if (s == &a)
		CHECK(fi_control(&a.cq->fid, FI_GETWAIT, &fd));
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "sockets";
	int failed = 0;
	uint64_t in = 0, v = 0;

	pair_cq_wait = FI_WAIT_FD;
	pair_threading = FI_THREAD_SAFE;
	pair_cq_opened = take_descriptor;
	open_pair(&a, &b, prov, FI_TAGGED | FI_MSG, FI_PROGRESS_MANUAL, 0, 0);
	if (fd < 0) {
		printf("FAIL: FI_GETWAIT gave descriptor %d\n", fd);
		return 1;
	}

	/* Warm-up: both directions, so the connection is up. */
	v = 41;
	post_u64(0, &a, &in, 1);
	post_u64(0, &b, &in, 1);
	post_u64(1, &b, &v, 1);
	if (reap_both(1, 1, "warm-up B->A"))
		return 1;
	post_u64(1, &a, &v, 1);
	if (reap_both(1, 1, "warm-up A->B"))
		return 1;

	for (int round = 0; round < ROUNDS && !failed; round++) {
		struct fid *fids[1] = { &a.cq->fid };
		pthread_t t;
		int r;

		in = 0;
		out_value = 0x5eed0000u + (uint64_t) round;
		post_u64(0, &a, &in, 0);
		double end = now_ms() + 10000;
		while ((r = fi_trywait(fabric, fids, 1)) == -FI_EAGAIN && now_ms() < end) {
			struct fi_cq_tagged_entry e;
			(void) fi_cq_read(a.cq, &e, 1);
		}
		if (r) {
			printf("FAIL round %d: fi_trywait %d (%s)\n", round, r, fi_strerror(-r));
			return 1;
		}
		CHECK(pthread_create(&t, NULL, sender, NULL));
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, DELAY_MS + POLL_LIMIT_MS);
		double woke = now_ms();
		CHECK(pthread_join(t, NULL));
		if (n != 1) {
			printf("FAIL round %d: poll on the CQ's FI_GETWAIT descriptor returned %d %.0f ms after the "
			       "message was sent (never readable)\n",
			       round, n, woke - sent_at);
			failed = 1;
			break;
		}
		struct fi_cq_tagged_entry e;
		ssize_t got = -FI_EAGAIN;
		double read_end = now_ms() + READ_LIMIT_MS;
		while (got == -FI_EAGAIN && now_ms() < read_end)
			got = fi_cq_read(a.cq, &e, 1);
		if (got != 1 || in != out_value) {
			printf("FAIL round %d: woke %.1f ms after the send, but fi_cq_read gave %zd, value %#llx "
			       "(want %#llx)\n",
			       round, woke - sent_at, got, (unsigned long long) in, (unsigned long long) out_value);
			failed = 1;
			break;
		}
		printf("round %d: woke %.1f ms after the send, message read\n", round, woke - sent_at);
	}
	close_pair(&a, &b);
	if (failed)
		return 1;
	printf("PASS getwait: %d rounds, the FI_GETWAIT descriptor woke each wait on arrival\n", ROUNDS);
	return 0;
}
