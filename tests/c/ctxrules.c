/*
 * The binding rules of shared transmit contexts and scalable endpoints
 * (fi_endpoint(3)), with the codes the man page and upstream give:
 *  - an endpoint binds one shared transmit context only (-FI_EINVAL for
 *    a second); a context with endpoints bound is not closed
 *    (-FI_EBUSY, and the fi_close after the endpoint's succeeds);
 *  - a scalable endpoint hands out contexts 0 .. count-1 only; it is not
 *    closed while a context is open; its name is context 0's, and
 *    context k listens on that port + k;
 *  - a shared receive context serves every endpoint bound to it: a
 *    message that arrived before any receive was posted (small, and a
 *    1 MiB rendezvous one) is taken by a receive posted to the context
 *    later; a receive posted first is used by whichever endpoint a message
 *    comes to; each completes on the CQ of the endpoint the message
 *    arrived at, data checked; fi_cancel on the context reports on the
 *    first bound endpoint's CQ; the context is not closed while bound.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include "check.h"
#include "cqwait.h"

static struct fi_info *get(uint64_t caps, size_t tx_cnt, size_t rx_cnt, int *rc)
{
	struct fi_info *h = fi_allocinfo(), *r = NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->fabric_attr->prov_name = strdup("sockets");
	h->addr_format = FI_SOCKADDR_IN;
	h->ep_attr->tx_ctx_cnt = tx_cnt;
	h->ep_attr->rx_ctx_cnt = rx_cnt;
	*rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, h, &r);
	fi_freeinfo(h);
	return r;
}

static unsigned port_of(const void *a)
{
	return ntohs(((const struct sockaddr_in *) a)->sin_port);
}

#define BIG (1u << 20)

/* Lets messages in flight arrive (they wait as unexpected either way;
 * the checks hold whether or not they are there yet). */
static void settle(struct fid_cq **cq)
{
	struct fi_cq_msg_entry e;
	for (int i = 0; i < 20; i++) {
		struct timespec ts = { 0, 5000000 };
		EXPECT(fi_cq_read(cq[0], &e, 1) == -FI_EAGAIN && fi_cq_read(cq[1], &e, 1) == -FI_EAGAIN,
		       "a completion before any receive was posted");
		nanosleep(&ts, NULL);
	}
}

/* Two endpoints share a receive context; a third sends to them. */
static void srx_traffic(struct fid_domain *domain, struct fid_av *av)
{
	struct fi_info *info;
	struct fid_ep *srx, *a[2], *b;
	struct fid_cq *cq[3];
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fi_cq_msg_entry e;
	fi_addr_t to[2];
	static char big[BIG], got[BIG], small[32], ctx[4];
	int rc;

	info = get(FI_MSG, 0, FI_SHARED_CONTEXT, &rc);
	if (rc)
		die("fi_getinfo(rx_ctx_cnt FI_SHARED_CONTEXT)", rc);
	CHECK(fi_srx_context(domain, info->rx_attr, &srx, NULL));
	for (int i = 0; i < 3; i++)
		CHECK(fi_cq_open(domain, &cqa, &cq[i], NULL));
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in n;
		size_t l = sizeof(n);
		CHECK(fi_endpoint(domain, info, &a[i], NULL));
		CHECK(fi_ep_bind(a[i], &srx->fid, 0));
		CHECK(fi_ep_bind(a[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_ep_bind(a[i], &av->fid, 0));
		CHECK(fi_enable(a[i]));
		CHECK(fi_getname(&a[i]->fid, &n, &l));
		EXPECT(fi_av_insert(av, &n, 1, &to[i], 0, NULL) == 1, "fi_av_insert");
	}
	EXPECT_RC(fi_ep_bind(a[0], &srx->fid, 0), -FI_EOPBADSTATE);
	info->ep_attr->rx_ctx_cnt = 1;
	CHECK(fi_endpoint(domain, info, &b, NULL));
	CHECK(fi_ep_bind(b, &cq[2]->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(b, &av->fid, 0));
	CHECK(fi_enable(b));
	for (unsigned i = 0; i < BIG; i++)
		big[i] = (char) (i * 7 + 1);

	/* 1: a message that arrived before any receive was posted waits at
	 * its endpoint and is taken by a receive posted to the context later:
	 * a small one to a[1], then a 1 MiB rendezvous one to a[0] (one at a
	 * time: a receive takes whichever waiting message comes first). */
	CHECK(fi_send(b, "early", 6, NULL, to[1], &ctx[0]));
	EXPECT(cq_wait_one(cq[2], &e) == 1, "send of the early message");
	settle(cq);
	CHECK(fi_recv(srx, small, sizeof(small), NULL, FI_ADDR_UNSPEC, &ctx[2]));
	EXPECT(cq_wait_one(cq[1], &e) == 1 && e.op_context == &ctx[2] && e.len == 6 && !strcmp(small, "early"),
	       "early message through the shared context on a[1]'s CQ (len %zu, '%.8s')", e.len, small);
	CHECK(fi_send(b, big, BIG, NULL, to[0], &ctx[1]));
	settle(cq);
	CHECK(fi_recv(srx, got, BIG, NULL, FI_ADDR_UNSPEC, &ctx[3]));
	EXPECT(cq_wait_one(cq[0], &e) == 1 && e.op_context == &ctx[3] && e.len == BIG && !memcmp(got, big, BIG),
	       "1 MiB message through the shared context on a[0]'s CQ (len %zu)", e.len);
	EXPECT(cq_wait_one(cq[2], &e) == 1 && e.op_context == &ctx[1], "send of the 1 MiB message");

	/* 2: receives posted first, one message to each endpoint. */
	memset(got, 0, 64);
	memset(small, 0, sizeof(small));
	CHECK(fi_recv(srx, small, sizeof(small), NULL, FI_ADDR_UNSPEC, &ctx[0]));
	CHECK(fi_recv(srx, got, 64, NULL, FI_ADDR_UNSPEC, &ctx[1]));
	CHECK(fi_send(b, "to-a0", 6, NULL, to[0], NULL));
	EXPECT(cq_wait_one(cq[0], &e) == 1 && e.op_context == &ctx[0] && !strcmp(small, "to-a0"),
	       "message to a[0] in the first posted buffer, on a[0]'s CQ");
	CHECK(fi_send(b, "to-a1", 6, NULL, to[1], NULL));
	EXPECT(cq_wait_one(cq[1], &e) == 1 && e.op_context == &ctx[1] && !strcmp(got, "to-a1"),
	       "message to a[1] in the second posted buffer, on a[1]'s CQ");
	EXPECT(cq_wait_one(cq[2], &e) == 1 && cq_wait_one(cq[2], &e) == 1, "two sends complete");

	/* 3: cancel on the context. */
	CHECK(fi_recv(srx, small, sizeof(small), NULL, FI_ADDR_UNSPEC, &ctx[2]));
	EXPECT_RC(fi_cancel(&srx->fid, &ctx[2]), 0);
	rc = cq_wait_one(cq[0], &e);
	EXPECT(rc == -FI_ECANCELED && e.op_context == &ctx[2], "cancel on the shared context: %d on a[0]'s CQ", rc);

	EXPECT_RC(fi_close(&srx->fid), -FI_EBUSY);
	CHECK(fi_close(&b->fid));
	CHECK(fi_close(&a[0]->fid));
	CHECK(fi_close(&a[1]->fid));
	EXPECT_RC(fi_close(&srx->fid), 0);
	for (int i = 0; i < 3; i++)
		CHECK(fi_close(&cq[i]->fid));
	fi_freeinfo(info);
}

int main(void)
{
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_stx *stx, *stx2;
	struct fid_ep *ep, *own, *sep, *tx[2], *rx0, *bad = NULL, *srx = NULL;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE, .rx_ctx_bits = 1 };
	int rc;

	struct fi_info *info = get(FI_MSG, FI_SHARED_CONTEXT, 0, &rc);
	if (rc)
		die("fi_getinfo(tx_ctx_cnt FI_SHARED_CONTEXT)", rc);
	EXPECT(info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT, "entry tx_ctx_cnt %zu", info->ep_attr->tx_ctx_cnt);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cqa, &cq, NULL));
	CHECK(fi_av_open(domain, &ava, &av, NULL));

	/* Shared transmit contexts. */
	CHECK(fi_stx_context(domain, info->tx_attr, &stx, NULL));
	CHECK(fi_stx_context(domain, NULL, &stx2, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	EXPECT_RC(fi_ep_bind(ep, &stx->fid, 0), 0);
	EXPECT_RC(fi_ep_bind(ep, &stx2->fid, 0), -FI_EINVAL);
	EXPECT_RC(fi_enable(ep), 0);
	EXPECT_RC(fi_close(&stx->fid), -FI_EBUSY);
	{
		struct fi_info *plain = fi_dupinfo(info);
		plain->ep_attr->tx_ctx_cnt = 1;
		CHECK(fi_endpoint(domain, plain, &own, NULL));
		/* As upstream: any endpoint may use a shared context. */
		EXPECT_RC(fi_ep_bind(own, &stx2->fid, 0), 0);
		CHECK(fi_close(&own->fid));
		fi_freeinfo(plain);
	}
	CHECK(fi_close(&ep->fid));
	EXPECT_RC(fi_close(&stx->fid), 0);
	EXPECT_RC(fi_close(&stx2->fid), 0);

	fi_freeinfo(info);
	srx_traffic(domain, av);
	(void) srx;

	/* Scalable endpoints: two contexts of each kind. */
	info = get(FI_MSG | FI_NAMED_RX_CTX, 2, 2, &rc);
	if (rc)
		die("fi_getinfo(tx_ctx_cnt 2)", rc);
	EXPECT(info->caps & FI_NAMED_RX_CTX, "caps lack FI_NAMED_RX_CTX");
	CHECK(fi_scalable_ep(domain, info, &sep, NULL));
	CHECK(fi_scalable_ep_bind(sep, &av->fid, 0));
	EXPECT_RC(fi_scalable_ep_bind(sep, &cq->fid, 0), -FI_EINVAL);
	EXPECT_RC(fi_tx_context(sep, 2, NULL, &bad, NULL), -FI_EINVAL);
	EXPECT_RC(fi_rx_context(sep, -1, NULL, &bad, NULL), -FI_EINVAL);
	EXPECT(bad == NULL, "context written on failure");
	CHECK(fi_tx_context(sep, 0, NULL, &tx[0], NULL));
	CHECK(fi_tx_context(sep, 1, NULL, &tx[1], NULL));
	CHECK(fi_rx_context(sep, 0, NULL, &rx0, NULL));
	EXPECT(tx[0]->fid.fclass == FI_CLASS_TX_CTX && rx0->fid.fclass == FI_CLASS_RX_CTX, "context classes %zu %zu",
	       tx[0]->fid.fclass, rx0->fid.fclass);
	{
		struct sockaddr_in a, b;
		size_t la = sizeof(a), lb = sizeof(b);
		EXPECT_RC(fi_getname(&sep->fid, &a, &la), 0);
		EXPECT_RC(fi_getname(&tx[1]->fid, &b, &lb), 0);
		EXPECT(port_of(&a) != 0 && port_of(&b) == port_of(&a) + 1,
		       "scalable endpoint port %u, context 1 port %u, want it + 1", port_of(&a), port_of(&b));
	}
	EXPECT_RC(fi_send(sep, "x", 1, NULL, 0, NULL), -FI_EINVAL);
	EXPECT_RC(fi_close(&sep->fid), -FI_EBUSY);
	CHECK(fi_close(&tx[0]->fid));
	CHECK(fi_close(&tx[1]->fid));
	CHECK(fi_close(&rx0->fid));
	EXPECT_RC(fi_close(&sep->fid), 0);
	fi_freeinfo(info);

	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	printf("ctxrules: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
