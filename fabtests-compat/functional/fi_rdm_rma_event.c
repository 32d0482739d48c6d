/*
 * fi_rdm_rma_event: FI_RMA_EVENT and counters on RDM endpoints.
 *
 * The server (target) binds two counters to its endpoint, one with
 * FI_REMOTE_WRITE and one with FI_REMOTE_READ, and registers two regions:
 * A with FI_RMA_EVENT and a third counter bound to it (fi_mr_bind with
 * FI_REMOTE_WRITE, then fi_mr_enable where the mr_mode asks), B without.
 * The client (initiator) binds counters with FI_WRITE and FI_READ to its
 * endpoint, then writes A 10 times (fi_write, fi_writev, fi_writemsg,
 * fi_inject_write), writes B 3 times and reads A 5 times. Counts must be
 * exact and stay put afterwards:
 *
 *   server: FI_REMOTE_WRITE counter 13, FI_REMOTE_READ counter 5, A's
 *           counter 10 (B's writes do not reach it, reads do not count);
 *           none of them has an error count; the receive CQ stays empty
 *   client: FI_WRITE counter 13 (the inject counts too: counters are
 *           updated for injected operations), FI_READ counter 5; then a
 *           write with a wrong key: an error completion on the CQ and the
 *           FI_WRITE counter's error count becomes 1, its success count
 *           stays 13; region A's counter does not move
 *
 * Waits use fi_cntr_wait with a bounded timeout; fi_cntr_wait beyond the
 * final count must time out (-FI_ETIMEDOUT).
 *
 * Run: -e rdm
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"

#define NWA 10 /* writes to A */
#define NWB 3  /* writes to B */
#define NRA 5  /* reads of A */
#define RSZ 65536
#define WAIT_MS 20000

static struct fid_cntr *c_rw, *c_rr, *c_mr; /* server */
static struct fid_cntr *c_w, *c_r;         /* client */

static void bind_counters(struct fid_ep *ep)
{
	int rc;
	if (ft_is_client()) {
		c_w = os_open_cntr();
		c_r = os_open_cntr();
		if ((rc = fi_ep_bind(ep, &c_w->fid, FI_WRITE)) || (rc = fi_ep_bind(ep, &c_r->fid, FI_READ)))
			ft_die("fi_ep_bind(counter, FI_WRITE / FI_READ): %s", fi_strerror(-rc));
	} else {
		c_rw = os_open_cntr();
		c_rr = os_open_cntr();
		if ((rc = fi_ep_bind(ep, &c_rw->fid, FI_REMOTE_WRITE)))
			ft_die("fi_ep_bind(counter, FI_REMOTE_WRITE): %s", fi_strerror(-rc));
		if ((rc = fi_ep_bind(ep, &c_rr->fid, FI_REMOTE_READ)))
			ft_die("fi_ep_bind(counter, FI_REMOTE_READ): %s", fi_strerror(-rc));
	}
}

/* Waits until `c` reaches `want` (bounded), then checks it is exactly
 * `want` and has no errors. */
static void expect(struct fid_cntr *c, uint64_t want, const char *what)
{
	int rc = fi_cntr_wait(c, want, WAIT_MS);
	FT_CHECK(rc == 0, "%s: fi_cntr_wait(%llu) = %d (%s), count %llu", what, (unsigned long long) want, rc,
		 fi_strerror(-rc), (unsigned long long) fi_cntr_read(c));
	FT_CHECK(fi_cntr_read(c) == want, "%s: count %llu, want %llu", what, (unsigned long long) fi_cntr_read(c),
		 (unsigned long long) want);
	FT_CHECK(fi_cntr_readerr(c) == 0, "%s: error count %llu", what, (unsigned long long) fi_cntr_readerr(c));
}

static void client(const struct os_rkey *a, const struct os_rkey *b, struct os_mr *local)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char *lb = local->buf;
	int ctx, n;
	for (int i = 0; i < NWA; i++) {
		size_t len = 1000 + (size_t) i * 3000, off = (size_t) i * 100;
		struct iovec iov[2] = { { lb, len / 2 }, { lb + len / 2, len - len / 2 } };
		void *desc[2] = { local->desc, local->desc };
		struct fi_rma_iov rma = { a->addr + off, len, a->key };
		struct fi_msg_rma m = { .msg_iov = iov, .desc = desc, .iov_count = 2, .addr = ft_peer, .rma_iov = &rma,
					.rma_iov_count = 1, .context = &ctx };
		xf_fill_at(lb, len, (size_t) i);
		switch (i % 4) {
		case 0: FT_POST(fi_write(ft_ep, lb, len, local->desc, ft_peer, a->addr + off, a->key, &ctx), "fi_write"); break;
		case 1: FT_POST(fi_writev(ft_ep, iov, desc, 2, ft_peer, a->addr + off, a->key, &ctx), "fi_writev"); break;
		case 2: FT_POST(fi_writemsg(ft_ep, &m, 0), "fi_writemsg"); break;
		default:
			FT_POST(fi_inject_write(ft_ep, lb, 16, ft_peer, a->addr + off, a->key), "fi_inject_write");
			continue;
		}
		xf_cq_get(ft_txcq, &e, "write to A");
	}
	for (int i = 0; i < NWB; i++) {
		FT_POST(fi_write(ft_ep, lb, 512, local->desc, ft_peer, b->addr + (size_t) i * 512, b->key, &ctx),
			"fi_write(B)");
		xf_cq_get(ft_txcq, &e, "write to B");
	}
	for (int i = 0; i < NRA; i++) {
		FT_POST(fi_read(ft_ep, lb, 4096, local->desc, ft_peer, a->addr + (size_t) i * 4096, a->key, &ctx),
			"fi_read(A)");
		xf_cq_get(ft_txcq, &e, "read of A");
	}
	expect(c_w, NWA + NWB, "client FI_WRITE counter");
	expect(c_r, NRA, "client FI_READ counter");
	os_sync();
	os_sync(); /* the server has checked its counters */
	/* an error: the FI_WRITE counter's error count */
	FT_POST(fi_write(ft_ep, lb, 64, local->desc, ft_peer, a->addr, a->key + b->key + 0x777, &ctx), "fi_write(bad key)");
	n = ft_cq_wait(ft_txcq, &e, &err, NULL);
	FT_CHECK(n < 0, "a write with a wrong key completed successfully");
	{
		double end = ft_now() + FT_TIMEOUT;
		while (fi_cntr_readerr(c_w) < 1 && ft_now() < end)
			(void) fi_cq_read(ft_txcq, NULL, 0);
	}
	FT_CHECK(fi_cntr_readerr(c_w) == 1, "FI_WRITE counter error count %llu after one failed write, want 1",
		 (unsigned long long) fi_cntr_readerr(c_w));
	FT_CHECK(fi_cntr_read(c_w) == NWA + NWB, "FI_WRITE counter %llu after a failed write, want %d",
		 (unsigned long long) fi_cntr_read(c_w), NWA + NWB);
	os_sync();
}

static void server(struct os_mr *a)
{
	int rc;
	os_sync(); /* the client's operations completed */
	expect(c_rw, NWA + NWB, "server FI_REMOTE_WRITE counter");
	expect(c_rr, NRA, "server FI_REMOTE_READ counter");
	expect(c_mr, NWA, "counter bound to region A");
	rc = fi_cntr_wait(c_mr, NWA + 1, 100);
	FT_CHECK(rc == -FI_ETIMEDOUT, "fi_cntr_wait beyond the final count = %d (%s), want -FI_ETIMEDOUT", rc,
		 fi_strerror(-rc));
	FT_CHECK(fi_cntr_read(c_rw) == NWA + NWB && fi_cntr_read(c_mr) == NWA, "counters moved after the last operation");
	FT_CHECK(xf_cq_quiet(ft_rxcq, NULL, 0.05), "an RMA without remote CQ data produced a receive completion");
	FT_CHECK(xf_verify_at(a->buf + (NWA - 1) * 100, 1000 + (NWA - 1) * 3000, NWA - 1) < 0,
		 "region A does not hold the last write's data");
	os_sync();
	os_sync(); /* the client's failed write */
	FT_CHECK(fi_cntr_read(c_mr) == NWA, "the refused write counted on region A's counter");
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	struct os_mr a, b, local;
	struct os_rkey mine[2] = { { 0, 0, 0 }, { 0, 0, 0 } }, peer[2];
	static char abuf[RSZ], bbuf[RSZ], lbuf[RSZ];
	int rc;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_RDM)
		ft_die("fi_rdm_rma_event runs on RDM endpoints (-e rdm)");
	hints = os_hints(FI_MSG | FI_RMA | FI_RMA_EVENT);
	hints->domain_attr->mr_mode |= FI_MR_RMA_EVENT;
	os_require(hints);
	ft_setup(hints);
	ft_before_enable = bind_counters;
	os_init();
	os_reg(&local, lbuf, sizeof(lbuf), FI_READ | FI_WRITE);
	if (!ft_is_client()) {
		c_mr = os_open_cntr();
		rc = os_reg_rc(&a, abuf, sizeof(abuf), FI_REMOTE_READ | FI_REMOTE_WRITE, FI_RMA_EVENT);
		if (rc)
			ft_die("fi_mr_reg(FI_RMA_EVENT): %s", fi_strerror(-rc));
		if ((rc = fi_mr_bind(a.mr, &c_mr->fid, FI_REMOTE_WRITE)))
			ft_die("fi_mr_bind(counter, FI_REMOTE_WRITE): %s", fi_strerror(-rc));
		if ((os_mr_mode & (FI_MR_RMA_EVENT | FI_MR_ENDPOINT)) && (rc = fi_mr_enable(a.mr)))
			ft_die("fi_mr_enable: %s", fi_strerror(-rc));
		os_reg(&b, bbuf, sizeof(bbuf), FI_REMOTE_READ | FI_REMOTE_WRITE);
		mine[0] = os_rkey_of(&a, 0, RSZ);
		mine[1] = os_rkey_of(&b, 0, RSZ);
	}
	os_swap_keys(mine, peer, 2);
	if (ft_is_client()) {
		client(&peer[0], &peer[1], &local);
	} else {
		server(&a);
		os_unreg(&a);
		os_unreg(&b);
	}
	os_unreg(&local);
	os_sync();
	/* the counters go after the endpoint they are bound to, before the domain */
	fi_close(&ft_ep->fid);
	ft_ep = NULL;
	{
		struct fid_cntr *all[5] = { c_rw, c_rr, c_mr, c_w, c_r };
		for (int i = 0; i < 5; i++)
			if (all[i] && (rc = fi_close(&all[i]->fid)))
				FT_CHECK(0, "fi_close(counter) = %d (%s)", rc, fi_strerror(-rc));
	}
	return os_finish("fi_rdm_rma_event");
}
