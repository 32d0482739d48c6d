/*
 * The transmit and receive contexts of a scalable endpoint are independent
 * objects (fi_endpoint(3), "SCALABLE ENDPOINTS"): each binds its own CQ
 * and is enabled on its own, so binding receive context k after transmit
 * context k is enabled works. Two call orders, each then moving one
 * message per context pair (its data checked, each completion on its
 * context's own CQ and nowhere else):
 *
 *   upstream: fabtests' fi_scalable_ep: open every context, bind and
 *             enable every transmit context, then bind and enable every
 *             receive context, then fi_enable the scalable endpoint;
 *   mpich:    MPICH 4's ch4:ofi: bind the AV and fi_enable the scalable
 *             endpoint first, then per context open (with attributes),
 *             bind (transmit CQ with FI_SELECTIVE_COMPLETION) and enable
 *             the transmit context, then the receive context. MPICH asks
 *             for op_flags FI_COMPLETION, which upstream's sockets
 *             contexts refuse (-FI_ENODATA): the attributes here are the
 *             entry's own.
 *
 * One process talks to itself: its scalable endpoint's name is inserted
 * in its AV and context k's sends go to fi_rx_addr(self, k, bits).
 * Arguments: the order (upstream, mpich or all; default all) and the
 * provider (sockets by default). Every wait is bounded.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include "check.h"
#include "cqwait.h"

#define CTX 2
#define BITS 1

static const char *prov = "sockets";

/* Whether `cq` stays empty for a little while. */
static int quiet(struct fid_cq *cq)
{
	struct fi_cq_msg_entry e;
	for (int i = 0; i < 1000; i++)
		if (fi_cq_read(cq, &e, 1) != -FI_EAGAIN)
			return 0;
	return 1;
}

static void run(int mpich)
{
	const char *order = mpich ? "mpich" : "upstream";
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_NAMED_RX_CTX;
	h->fabric_attr->prov_name = strdup(prov);
	h->addr_format = FI_SOCKADDR_IN;
	h->mode = FI_CONTEXT;
	int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, h, &info);
	fi_freeinfo(h);
	if (rc)
		die("fi_getinfo", rc);
	if (info->domain_attr->tx_ctx_cnt < CTX || info->domain_attr->rx_ctx_cnt < CTX)
		die("the domain offers too few contexts", -FI_ENODATA);
	info->ep_attr->tx_ctx_cnt = CTX;
	info->ep_attr->rx_ctx_cnt = CTX;

	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep, *tx[CTX], *rx[CTX];
	struct fid_cq *txcq[CTX], *rxcq[CTX];
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_MAP, .rx_ctx_bits = BITS };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &ava, &av, NULL));
	for (int k = 0; k < CTX; k++) {
		CHECK(fi_cq_open(domain, &cqa, &txcq[k], NULL));
		CHECK(fi_cq_open(domain, &cqa, &rxcq[k], NULL));
	}
	CHECK(fi_scalable_ep(domain, info, &sep, NULL));
	if (mpich) {
		CHECK(fi_scalable_ep_bind(sep, &av->fid, 0));
		EXPECT_RC(fi_enable(sep), 0);
		for (int k = 0; k < CTX; k++) {
			struct fi_tx_attr ta = *info->tx_attr;
			struct fi_rx_attr ra = *info->rx_attr;
			CHECK(fi_tx_context(sep, k, &ta, &tx[k], NULL));
			EXPECT_RC(fi_ep_bind(tx[k], &txcq[k]->fid, FI_SEND | FI_SELECTIVE_COMPLETION), 0);
			EXPECT_RC(fi_enable(tx[k]), 0);
			CHECK(fi_rx_context(sep, k, &ra, &rx[k], NULL));
			/* MPICH's create_sep_rx: this bind failed with
			 * -FI_EOPBADSTATE when enabling tx[k] enabled rx[k]. */
			EXPECT_RC(fi_ep_bind(rx[k], &rxcq[k]->fid, FI_RECV), 0);
			EXPECT_RC(fi_enable(rx[k]), 0);
		}
	} else {
		for (int k = 0; k < CTX; k++) {
			CHECK(fi_tx_context(sep, k, NULL, &tx[k], NULL));
			CHECK(fi_rx_context(sep, k, NULL, &rx[k], NULL));
		}
		CHECK(fi_scalable_ep_bind(sep, &av->fid, 0));
		for (int k = 0; k < CTX; k++) {
			EXPECT_RC(fi_ep_bind(tx[k], &txcq[k]->fid, FI_SEND), 0);
			EXPECT_RC(fi_enable(tx[k]), 0);
		}
		for (int k = 0; k < CTX; k++) {
			/* fi_scalable_ep's line 152: failed with
			 * -FI_EOPBADSTATE when enabling tx[k] enabled rx[k]. */
			EXPECT_RC(fi_ep_bind(rx[k], &rxcq[k]->fid, FI_RECV), 0);
			EXPECT_RC(fi_enable(rx[k]), 0);
		}
		EXPECT_RC(fi_enable(sep), 0);
	}

	char name[64];
	size_t len = sizeof(name);
	fi_addr_t self;
	CHECK(fi_getname(&sep->fid, name, &len));
	EXPECT_RC(fi_av_insert(av, name, 1, &self, 0, NULL), 1);

	for (int k = 0; k < CTX; k++) {
		uint32_t out = 0x12345670u + (uint32_t) k, in = 0;
		struct fi_cq_msg_entry e;
		int got;
		CHECK(fi_recv(rx[k], &in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rx[k]));
		ssize_t s;
		do
			s = fi_sendmsg(tx[k],
				       &(struct fi_msg){ .msg_iov = &(struct iovec){ &out, sizeof(out) },
							  .iov_count = 1,
							  .addr = fi_rx_addr(self, k, BITS),
							  .context = &tx[k] },
				       FI_COMPLETION);
		while (s == -FI_EAGAIN);
		if (s)
			die("fi_sendmsg", s);
		got = cq_wait_one(txcq[k], &e);
		EXPECT(got == 1 && e.op_context == &tx[k], "%s: context %d: send completion %d (context %p)", order, k,
		       got, got == 1 ? e.op_context : NULL);
		got = cq_wait_one(rxcq[k], &e);
		EXPECT(got == 1 && e.op_context == &rx[k] && e.len == sizeof(in) && in == out,
		       "%s: context %d: receive completion %d, len %zu, data %#x want %#x", order, k, got,
		       got == 1 ? e.len : 0, in, out);
	}
	for (int k = 0; k < CTX; k++)
		EXPECT(quiet(txcq[k]) && quiet(rxcq[k]), "%s: context %d: a CQ holds a stray completion", order, k);

	for (int k = 0; k < CTX; k++) {
		CHECK(fi_close(&tx[k]->fid));
		CHECK(fi_close(&rx[k]->fid));
	}
	CHECK(fi_close(&sep->fid));
	for (int k = 0; k < CTX; k++) {
		CHECK(fi_close(&txcq[k]->fid));
		CHECK(fi_close(&rxcq[k]->fid));
	}
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	if (argc > 2)
		prov = argv[2];
	if (!strcmp(which, "upstream") || !strcmp(which, "all"))
		run(0);
	if (!strcmp(which, "mpich") || !strcmp(which, "all"))
		run(1);
	printf("sepctx (%s, %s): %d checks, %d failed\n", which, prov, checks, failures);
	return failures ? 1 : 0;
}
