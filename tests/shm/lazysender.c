/*
 * A receive of a large message does not wait for its sender to call
 * libfabric again (tests/shm/t-lazysender.sh): the rendezvous copy that
 * the receiver shares out with the sender (providers/shm/src/path/
 * split.rs) must complete without the sender's help.
 *
 * The parent opens an RDM endpoint of shm, forks, and each side opens its
 * own endpoint; they swap names over a pipe pair and exchange one small
 * message each way (so both are connected). Then, ROUNDS times: the child
 * sends SIZE bytes (a pattern that changes every round), then sleeps
 * LAZY seconds without calling libfabric, then drives its CQ until the
 * send completes; the parent posts the receive first and must get the
 * receive's completion, with the right bytes, within BOUND seconds of the
 * child's "sent" note on the pipe. Every wait is bounded.
 *
 * Prints "lazysender: N checks, N failed"; exits 0 only without failures.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "../c/check.h"
#include "shm_ep.h"

#define SIZE (4u << 20)
#define ROUNDS 3
#define LAZY 2
#define BOUND 1.0


static void open_ep(void)
{
	shm_open_ep(shm_hints(FI_MSG), FI_CQ_FORMAT_MSG, 64);
}

/* Completions read while a send was retried (-FI_EAGAIN: a provider may
 * need progress to connect), not yet taken by wait_one. */
static int early;

/* Drives the CQ until one completion comes (within `bound` seconds):
 * 1 for a completion, 0 on timeout, a negative code for an error entry. */
static int wait_one(double bound)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err = { 0 };
	double end = now() + bound;
	if (early > 0) {
		early--;
		return 1;
	}
	while (now() < end) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			fi_cq_readerr(cq, &err, 0);
			return -err.err;
		}
	}
	return 0;
}

/* fi_send, driving the CQ while it answers -FI_EAGAIN (bounded). */
static void send_to(const void *b, size_t n, fi_addr_t to)
{
	struct fi_cq_msg_entry e;
	double end = now() + 10;
	ssize_t rc;
	while ((rc = fi_send(ep, b, n, NULL, to, NULL)) == -FI_EAGAIN && now() < end)
		if (fi_cq_read(cq, &e, 1) == 1)
			early++;
	if (rc)
		die("fi_send", rc);
}

static void fill(char *b, int round)
{
	for (size_t i = 0; i < SIZE; i++)
		b[i] = (char) (i * 7 + (size_t) round * 13 + i / 4096);
}

int main(void)
{
	int down[2], up[2];
	fi_addr_t to;
	char *buf = malloc(SIZE), *want = malloc(SIZE);
	if (!buf || !want || pipe(down) || pipe(up))
		die("setup", -FI_ENOMEM);
	pid_t kid = fork();
	int child = kid == 0;
	int rd = child ? down[0] : up[0], wr = child ? up[1] : down[1];
	open_ep();
	to = shm_swap_names(rd, wr);
	/* Hello each way. */
	CHECK(fi_recv(ep, buf, 64, NULL, FI_ADDR_UNSPEC, NULL));
	send_to("hello", 6, to);
	EXPECT(wait_one(10) == 1 && wait_one(10) == 1, "%s: hello exchange", child ? "child" : "parent");
	for (int r = 0; r < ROUNDS; r++) {
		char note;
		if (child) {
			fill(buf, r);
			if (read(rd, &note, 1) != 1) /* the parent's receive is posted */
				die("pipe", -FI_EIO);
			send_to(buf, SIZE, to);
			double t = now();
			if (write(wr, "s", 1) != 1)
				die("pipe", -FI_EIO);
			sleep(LAZY);
			int rc = wait_one(10);
			EXPECT(rc == 1, "child round %d: the send ended with %d", r, rc);
			(void) t;
		} else {
			fill(want, r);
			memset(buf, 0, SIZE);
			CHECK(fi_recv(ep, buf, SIZE, NULL, FI_ADDR_UNSPEC, NULL));
			if (write(wr, "r", 1) != 1 || read(rd, &note, 1) != 1)
				die("pipe", -FI_EIO);
			double t = now();
			int rc = wait_one(BOUND);
			double took = now() - t;
			EXPECT(rc == 1, "round %d: no receive completion within %.1f s of the send (%d), the sender not calling libfabric for %d s",
			       r, BOUND, rc, LAZY);
			EXPECT(rc != 1 || memcmp(buf, want, SIZE) == 0, "round %d: the bytes differ", r);
			printf("round %d: received %u bytes %.3f s after the send\n", r, SIZE, took);
			if (rc == 0 && wait_one(10) != 1) /* let the round finish anyway */
				die("the receive never completed", -FI_ETIMEDOUT);
		}
	}
	if (!child) {
		int st = 0;
		waitpid(kid, &st, 0);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %d)", st);
	}
	shm_close_ep();
	printf("lazysender %s: %d checks, %d failed\n", child ? "child" : "parent", checks, failures);
	return failures ? 1 : 0;
}
