/*
 * What the shm test programs share: one RDM endpoint of the shm provider
 * per process (its fabric, domain, CQ bound both ways and AV), a
 * monotonic clock, and the swap of endpoint names over a pipe pair.
 * Include it after the rdma headers and ../c/check.h.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_SHM_EP_H
#define OXI_TESTS_SHM_EP_H

#include <string.h>
#include <time.h>
#include <unistd.h>

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;

static inline double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* Hints for an RDM endpoint of the shm provider with `caps` and manual
 * progress; the caller may change them before shm_open_ep. */
static inline struct fi_info *shm_hints(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->fabric_attr->prov_name = strdup("shm");
	return hints;
}

/* Opens the process's endpoint from `hints` (freed here), with a CQ of
 * `size` entries in `format` bound both ways, and enables it. */
static inline void shm_open_ep(struct fi_info *hints, enum fi_cq_format format, size_t size)
{
	struct fi_cq_attr ca = { .format = format, .size = size };
	struct fi_av_attr aa = { .type = FI_AV_UNSPEC };
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq, NULL));
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
}

/* Closes what shm_open_ep opened. */
static inline void shm_close_ep(void)
{
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

/* Writes our endpoint's name to `wr`, reads the peer's from `rd` and
 * inserts it: the peer's address. */
static inline fi_addr_t shm_swap_names(int rd, int wr)
{
	char name[256], peer[256];
	size_t len = sizeof(name), plen;
	fi_addr_t to;
	CHECK(fi_getname(&ep->fid, name, &len));
	if (write(wr, &len, sizeof(len)) != sizeof(len) || write(wr, name, len) != (ssize_t) len)
		die("writing the name", -FI_EIO);
	if (read(rd, &plen, sizeof(plen)) != sizeof(plen) || plen > sizeof(peer) ||
	    read(rd, peer, plen) != (ssize_t) plen)
		die("reading the peer's name", -FI_EIO);
	if (fi_av_insert(av, peer, 1, &to, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	return to;
}

#endif
