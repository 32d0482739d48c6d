/*
 * Sends posted back to back reach the peer even when the sender then makes
 * no more calls on its own endpoint or CQ: a provider may hold such sends
 * to write them together (ours does, FI_SOCKETS_TX_COALESCE), but with
 * FI_PROGRESS_AUTO it must still deliver them by itself.
 *
 * Two RDM endpoints in one process, each with its own CQ. B posts the
 * receives; A posts a burst of tagged sends, then a burst of tagged
 * injects; after each burst the program polls only B's CQ (bounded) until
 * every message arrived, checks the data, and only then reads A's send
 * completions. Then the same for the answer a write waits for (ours holds
 * a write's bare answer for the target's next frame or progress call): A
 * writes into B's memory with remote CQ data, the program polls only B's
 * CQ until the write arrived, then only A's until the write completes.
 * Usage: coalesce [PROVIDER] (default sockets).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include "check.h"

#define BURST 32
#define LEN 48
#define CQ_SIZE 0

#include "pair.h"

/* Posts one send, driving the sender's progress while the provider asks
 * for it (-FI_EAGAIN: upstream's rxm connects inside progress calls). */
static void post(struct side *a, const char *buf, uint64_t tag, int inject)
{
	time_t end = time(NULL) + 10;
	for (;;) {
		ssize_t rc = inject ? fi_tinject(a->ep, buf, LEN, a->peer, tag)
				    : fi_tsend(a->ep, buf, LEN, NULL, a->peer, tag, (void *) buf);
		if (rc != -FI_EAGAIN || time(NULL) >= end) {
			CHECK(rc);
			return;
		}
		(void) fi_cq_read(a->cq, NULL, 0);
	}
}

static void burst(struct side *a, struct side *b, int inject, int round)
{
	static char tx[BURST][LEN], rx[BURST][LEN];
	for (int i = 0; i < BURST; i++) {
		memset(rx[i], 0, LEN);
		CHECK(fi_trecv(b->ep, rx[i], LEN, NULL, b->peer, (uint64_t) i, 0, rx[i]));
	}
	for (int i = 0; i < BURST; i++) {
		memset(tx[i], 'a' + (round + i) % 26, LEN);
		post(a, tx[i], (uint64_t) i, inject);
	}
	/* Only B's side is driven from here on. */
	EXPECT(reap(b->cq, BURST, inject ? "inject burst arrival" : "send burst arrival") == 0,
	       "every message of the burst arrives while only the receiver polls");
	for (int i = 0; i < BURST; i++)
		EXPECT(rx[i][0] == 'a' + (round + i) % 26 && rx[i][LEN - 1] == rx[i][0],
		       "message %d of burst %d carries its own bytes", i, round);
	if (!inject)
		EXPECT(reap(a->cq, BURST, "send completions") == 0, "every send completes");
}

/* One fi_writedata from A into B's memory; see the top of the file. */
static void rma_round(struct side *a, struct side *b, int round)
{
	static char src[LEN], dst[LEN];
	uint64_t mode = (uint64_t) info->domain_attr->mr_mode;
	struct fid_mr *mr, *lmr = NULL;
	void *desc = NULL;
	CHECK(fi_mr_reg(domain, dst, LEN, FI_REMOTE_WRITE, 0, 2 * (uint64_t) round, 0, &mr, NULL));
	if (mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(domain, src, LEN, FI_WRITE, 0, 2 * (uint64_t) round + 1, 0, &lmr, NULL));
		desc = fi_mr_desc(lmr);
	}
	uint64_t addr = (mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) dst : 0;
	memset(src, 'A' + round, LEN);
	memset(dst, 0, LEN);
	time_t end = time(NULL) + 10;
	ssize_t rc;
	while ((rc = fi_writedata(a->ep, src, LEN, desc, (uint64_t) round, a->peer, addr, fi_mr_key(mr), src)) ==
		       -FI_EAGAIN &&
	       time(NULL) < end)
		(void) fi_cq_read(a->cq, NULL, 0);
	CHECK(rc);
	EXPECT(reap(b->cq, 1, "remote write") == 0, "the write reaches the target");
	EXPECT(dst[0] == 'A' + round && dst[LEN - 1] == dst[0], "the write's bytes are in the target's memory");
	/* Only A's side is driven from here on. */
	EXPECT(reap(a->cq, 1, "write completion") == 0, "the write completes while only the initiator polls");
	fi_close(&mr->fid);
	if (lmr)
		fi_close(&lmr->fid);
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "sockets";
	struct side a, b;

	open_pair(&a, &b, prov, FI_TAGGED | FI_RMA, FI_PROGRESS_AUTO,
		  FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, CQ_SIZE);
	for (int round = 0; round < 3; round++) {
		burst(&a, &b, 0, round);
		burst(&a, &b, 1, round);
		rma_round(&a, &b, round);
	}
	close_pair(&a, &b);
	printf("coalesce (%s): %d checks, %d failed\n", prov, checks, failures);
	return failures ? 1 : 0;
}
