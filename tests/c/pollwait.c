/*
 * A blocking wait after a spell of busy polling wakes when the message
 * arrives, not at the wait's next periodic look.
 *
 * While an application polls an endpoint's CQ, our sockets provider takes
 * the endpoint's lone connection out of its epoll set (it reads the socket
 * on every poll anyway, and each watched arrival costs the sender a wake-up
 * callback). A blocking wait must put it back before it sleeps: otherwise
 * the sleeper only sees the message when its wait looks again on its own
 * (every 100 ms in ours), or never in a provider without such a look.
 *
 * Two RDM endpoints A and B in one thread-safe domain of one process,
 * manual progress (no progress thread to hide a missed wake-up), one CQ
 * each. Each round: ping-pong A<->B polling both CQs for 300 ms (long
 * enough for A's connection to leave the set), then the main thread blocks
 * in fi_cq_sread on A's CQ while a helper thread waits until the main
 * thread sleeps, sends B->A and notes the time. The wait must return the message (data checked) within
 * 50 ms of the send, in every one of 5 rounds.
 * Usage: pollwait [PROVIDER] (default sockets).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "pair.h"

#define ROUNDS 5
#define POLL_MS 300
#define WAKE_MS 50
#define TAG_PING 1
#define TAG_WAKE 2

static struct side a, b;
static pid_t main_tid;
static double sent_at;
static uint64_t wake_value;

/* Posts a tagged send (`send`) or receive of the 8 bytes at `v` on `s`
 * with `tag`, retrying while the provider asks for it (driving `s`'s CQ,
 * and `other`'s unless NULL), for at most 10 s. */
static void post_u64(int send, struct side *s, struct side *other, uint64_t *v, uint64_t tag)
{
	double end = now_ms() + 10000;
	for (;;) {
		ssize_t rc = send ? fi_tsend(s->ep, v, sizeof(*v), NULL, s->peer, tag, v)
				  : fi_trecv(s->ep, v, sizeof(*v), NULL, s->peer, tag, 0, v);
		if (rc != -FI_EAGAIN || now_ms() >= end) {
			if (rc)
				die(send ? "fi_tsend" : "fi_trecv", rc);
			return;
		}
		(void) fi_cq_read(s->cq, NULL, 0);
		if (other)
			(void) fi_cq_read(other->cq, NULL, 0);
	}
}

/* Reads completions from `s`'s CQ until those of contexts `c1` and `c2`
 * (NULL: none) came, in any order, driving `other` too (manual progress:
 * a connection being set up needs both ends driven); at most 10 s. Any
 * other completion or an error fails. */
static void reap2(struct side *s, struct side *other, void *c1, void *c2, const char *what)
{
	struct fi_cq_tagged_entry e;
	double end = now_ms() + 10000;
	while (c1 || c2) {
		ssize_t n = fi_cq_read(s->cq, &e, 1);
		if (n == 1) {
			if (e.op_context == c1 && c1)
				c1 = NULL;
			else if (e.op_context == c2 && c2)
				c2 = NULL;
			else {
				printf("FAIL %s: unexpected completion (context %p, flags %#llx)\n", what,
				       e.op_context, (unsigned long long) e.flags);
				exit(1);
			}
			continue;
		}
		if (n != -FI_EAGAIN) {
			struct fi_cq_err_entry err = { 0 };
			if (n == -FI_EAVAIL)
				(void) fi_cq_readerr(s->cq, &err, 0);
			die(what, n == -FI_EAVAIL ? -err.err : n);
		}
		if (now_ms() >= end)
			die(what, -FI_ETIMEDOUT);
		(void) fi_cq_read(other->cq, NULL, 0);
	}
}

/* One message each way, both CQs polled. */
static void ping_pong(uint64_t i)
{
	uint64_t out_a = i, out_b = ~i, in_a = 0, in_b = 0;
	post_u64(0, &b, &a, &in_b, TAG_PING);
	post_u64(0, &a, &b, &in_a, TAG_PING);
	post_u64(1, &a, &b, &out_a, TAG_PING);
	reap2(&b, &a, &in_b, NULL, "ping received");
	post_u64(1, &b, &a, &out_b, TAG_PING);
	reap2(&a, &b, &out_a, &in_a, "ping sent, pong received");
	reap2(&b, &a, &out_b, NULL, "pong sent");
	if (in_b != i || in_a != ~i)
		die("ping-pong data", -FI_EIO);
}

/* Whether thread `tid` of this process is asleep (state S). */
static int asleep(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* The helper: once the main thread sleeps in its wait (at most 5 s), B
 * sends to A and reaps its send completion. */
static void *helper(void *arg)
{
	(void) arg;
	double end = now_ms() + 5000;
	while (!asleep(main_tid) && now_ms() < end)
		sched_yield();
	sent_at = now_ms();
	post_u64(1, &b, NULL, &wake_value, TAG_WAKE);
	/* Manual progress: B's send completes (and may only go out) in B's
	 * progress, which only this thread drives now. */
	struct fi_cq_tagged_entry e;
	end = now_ms() + 10000;
	ssize_t n;
	while ((n = fi_cq_read(b.cq, &e, 1)) == -FI_EAGAIN && now_ms() < end)
		;
	if (n != 1 || e.op_context != &wake_value)
		die("wake-up message sent", n == 1 ? -FI_EOTHER : n);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "sockets";
	pair_cq_wait = FI_WAIT_UNSPEC;
	pair_threading = FI_THREAD_SAFE;
	open_pair(&a, &b, prov, FI_TAGGED, FI_PROGRESS_MANUAL, 0, 0);
	main_tid = (pid_t) syscall(SYS_gettid);
	uint64_t n = 0;
	for (int r = 0; r < ROUNDS; r++) {
		double end = now_ms() + POLL_MS;
		while (now_ms() < end)
			ping_pong(n++);
		uint64_t got = 0;
		wake_value = 0x5eed0000u + (uint64_t) r;
		post_u64(0, &a, &b, &got, TAG_WAKE);
		pthread_t t;
		if (pthread_create(&t, NULL, helper, NULL))
			die("pthread_create", -FI_EOTHER);
		struct fi_cq_tagged_entry e;
		ssize_t rc = fi_cq_sread(a.cq, &e, 1, NULL, 5000);
		double woke = now_ms();
		pthread_join(t, NULL);
		EXPECT(rc == 1, "round %d: fi_cq_sread returned %zd (%s)", r, rc, fi_strerror((int) -rc));
		if (rc != 1)
			continue;
		EXPECT(e.op_context == &got && got == wake_value, "round %d: wrong completion or data %#llx", r,
		       (unsigned long long) got);
		EXPECT(woke - sent_at < WAKE_MS, "round %d: the wait woke %.1f ms after the send (limit %d ms)", r,
		       woke - sent_at, WAKE_MS);
		printf("round %d: %llu ping-pongs polled, woke %.3f ms after the send\n", r,
		       (unsigned long long) n, woke - sent_at);
	}
	close_pair(&a, &b);
	printf("%s: %d checks, %d failures\n", failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
