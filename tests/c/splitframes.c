/*
 * A long run of frames without payload that the receiver reads in one go
 * must stay in step, whatever read boundary falls inside a frame header.
 *
 * Two RDM endpoints in one process, manual progress. A posts a burst of
 * tagged sends with FI_DELIVERY_COMPLETE and flushes them; only B is then
 * driven until every message arrived, so B's acknowledgements (bare
 * headers in our provider) pile up unread on A's side, more of them than
 * one read takes. Then only A is driven: every send must complete without
 * error and the connection must carry a last message both ways. A receiver
 * that loses its place in the byte stream at a read boundary reports a
 * malformed frame and drops the connection instead.
 * Usage: splitframes [PROVIDER] (default sockets).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"

#define MAX_BURST 3000
#define LEN 8
#define CQ_SIZE (2 * MAX_BURST)

#include "pair.h"

/* Posts a send, driving both sides while the provider asks for it (ours
 * queues the whole burst; upstream's providers may need the receiver to
 * make room first). */
static void send_one(struct side *a, struct side *b, char *buf, uint64_t tag, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = LEN };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = a->peer, .tag = tag, .context = buf,
	};
	time_t end = time(NULL) + 10;
	for (;;) {
		ssize_t rc = fi_tsendmsg(a->ep, &m, flags);
		if (rc != -FI_EAGAIN || time(NULL) >= end) {
			CHECK(rc);
			return;
		}
		(void) fi_cq_read(a->cq, NULL, 0);
		(void) fi_cq_read(b->cq, NULL, 0);
	}
}

/* Reads `want` completions from B's CQ; A gets a progress call only when
 * B found nothing for 50 ms (ours never needs one: the burst left A with
 * the few progress calls before; upstream's sockets sends in progress
 * calls). At most 20 s. */
static int arrive(struct side *a, struct side *b, int want)
{
	struct fi_cq_tagged_entry e[16];
	struct timespec idle, t;
	time_t end = time(NULL) + 20;
	clock_gettime(CLOCK_MONOTONIC, &idle);
	while (want > 0 && time(NULL) < end) {
		ssize_t n = fi_cq_read(b->cq, e, 16);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (n > 0) {
			want -= (int) n;
			idle = t;
		} else if (n != -FI_EAGAIN) {
			printf("FAIL burst arrival: fi_cq_read %zd (%s)\n", n, fi_strerror((int) -n));
			return -1;
		} else if ((t.tv_sec - idle.tv_sec) * 1000 + (t.tv_nsec - idle.tv_nsec) / 1000000 > 50) {
			(void) fi_cq_read(a->cq, NULL, 0);
			idle = t;
		}
	}
	if (want > 0)
		printf("FAIL burst arrival: %d messages missing after 20 s\n", want);
	return want > 0 ? -1 : 0;
}

static void burst(struct side *a, struct side *b, int n, int round)
{
	static char tx[MAX_BURST][LEN], rx[MAX_BURST][LEN];
	for (int i = 0; i < n; i++) {
		memset(rx[i], 0, LEN);
		ssize_t rc;
		time_t end = time(NULL) + 10;
		while ((rc = fi_trecv(b->ep, rx[i], LEN, NULL, b->peer, (uint64_t) i, 0, rx[i])) == -FI_EAGAIN &&
		       time(NULL) < end)
			(void) fi_cq_read(b->cq, NULL, 0);
		CHECK(rc);
	}
	for (int i = 0; i < n; i++) {
		memset(tx[i], 'a' + (round + i) % 26, LEN);
		send_one(a, b, tx[i], (uint64_t) i, FI_DELIVERY_COMPLETE | FI_COMPLETION);
	}
	/* A few progress calls on A write what it may hold; B has not run, so
	 * no acknowledgement can be read yet. */
	for (int i = 0; i < 8; i++)
		(void) fi_cq_read(a->cq, NULL, 0);
	EXPECT(arrive(a, b, n) == 0, "all %d messages of round %d arrive", n, round);
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += rx[i][0] != 'a' + (round + i) % 26 || rx[i][LEN - 1] != rx[i][0];
	EXPECT(bad == 0, "every message of round %d carries its own bytes (%d do not)", round, bad);
	/* Only A from here: it reads the acknowledgements in one run. */
	EXPECT(reap(a->cq, n, "send completions") == 0,
	       "all %d sends of round %d complete without error", n, round);
}

/* One message from A to B, both sides driven (the connection's handshake
 * needs both): the connection works. */
static void exchange(struct side *a, struct side *b, const char *what)
{
	static char x[LEN], y[LEN];
	struct fi_cq_tagged_entry e;
	int got_a = 0, got_b = 0;
	memset(y, 0, LEN);
	CHECK(fi_trecv(b->ep, y, LEN, NULL, b->peer, 7, 0, y));
	memset(x, 'z', LEN);
	send_one(a, b, x, 7, FI_COMPLETION);
	time_t end = time(NULL) + 10;
	while ((!got_a || !got_b) && time(NULL) < end) {
		got_a += fi_cq_read(a->cq, &e, 1) == 1;
		got_b += fi_cq_read(b->cq, &e, 1) == 1;
	}
	EXPECT(got_a == 1 && got_b == 1 && y[0] == 'z', "%s: a message gets through", what);
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "sockets";
	struct side a, b;

	open_pair(&a, &b, prov, FI_TAGGED, FI_PROGRESS_MANUAL, 0, CQ_SIZE);
	exchange(&a, &b, "before the bursts (A to B)");
	exchange(&b, &a, "before the bursts (B to A)");
	/* Bursts of different lengths put the read boundaries at different
	 * places inside the run (within the provider's queue sizes). */
	int sizes[] = { 1000, 2000, 1500, MAX_BURST };
	size_t cap = info->rx_attr->size < info->tx_attr->size ? info->rx_attr->size : info->tx_attr->size;
	for (int r = 0; r < 4; r++)
		burst(&a, &b, (size_t) sizes[r] < cap ? sizes[r] : (int) cap, r);
	exchange(&a, &b, "after the bursts (A to B)");
	exchange(&b, &a, "after the bursts (B to A)");
	close_pair(&a, &b);
	printf("splitframes (%s): %d checks, %d failed\n", prov, checks, failures);
	return failures ? 1 : 0;
}
