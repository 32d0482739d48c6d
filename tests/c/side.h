/*
 * What the single-endpoint test programs (unexpbound.c, busywait.c,
 * shmrmakill.c) share: a monotonic clock and one endpoint (a sockets RDM
 * one, or as hints ask) with its own fabric, domain, CQ and AV. Include it after check.h and the rdma
 * headers.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_SIDE_H
#define OXI_TESTS_SIDE_H

#include <string.h>
#include <time.h>

static double __attribute__((unused)) now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
};

/* Opens an enabled endpoint as `hints` ask (`node`, `service` and `flags`
 * as for fi_getinfo); its CQ (for both directions) opened with `ca`, its
 * AV a table. */
static void open_side_as(struct side *s, struct fi_info *hints, const char *node, const char *service,
			 uint64_t flags, struct fi_cq_attr ca)
{
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	CHECK(fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &s->info));
	CHECK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	CHECK(fi_domain(s->fabric, s->info, &s->domain, NULL));
	CHECK(fi_cq_open(s->domain, &ca, &s->cq, NULL));
	CHECK(fi_av_open(s->domain, &aa, &s->av, NULL));
	CHECK(fi_endpoint(s->domain, s->info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
}

/* Opens an enabled RDM endpoint of the sockets provider with `caps` and
 * `progress`; `node` and `flags` as for fi_getinfo (service "0"); its CQ
 * (for both directions) opened with `ca`. */
static void __attribute__((unused)) open_side(struct side *s, uint64_t caps, enum fi_progress progress,
					      const char *node, uint64_t flags, struct fi_cq_attr ca)
{
	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->domain_attr->data_progress = progress;
	open_side_as(s, hints, node, "0", flags, ca);
	fi_freeinfo(hints);
}

static void __attribute__((unused)) close_side(struct side *s)
{
	fi_close(&s->ep->fid);
	fi_close(&s->cq->fid);
	fi_close(&s->av->fid);
	fi_close(&s->domain->fid);
	fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

#endif
