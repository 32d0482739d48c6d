/*
 * What fi_getinfo answers to hints, as upstream's fabtests (unit test
 * fi_getinfo_test, functional test fi_multi_mr) ask and check it:
 *
 *   mrold:    hints with FI_RMA and mr_mode set to the pre-1.5 value
 *             FI_MR_SCALABLE (or FI_MR_BASIC) alone: no entry, or entries
 *             whose mr_mode is exactly that value (fi_mr(3): the old
 *             values are not cleared), and -FI_ENODATA when one is
 *             combined with other bits (they are set alone);
 *   mrecho:   hints offering FI_MR_LOCAL, FI_MR_ENDPOINT, FI_MR_ALLOCATED,
 *             FI_MR_PROV_KEY and FI_MR_VIRT_ADDR (fabtests' default) to a
 *             provider that needs none of them: the entries' mr_mode has
 *             only bits among those offered, and neither FI_MR_VIRT_ADDR
 *             nor FI_MR_PROV_KEY (fi_getinfo(3): the provider returns the
 *             bits it requires);
 *   mrwrite:  then, as fi_multi_mr does, regions registered with offset 0
 *             and requested keys 1, 2, 3 are written by a peer at address
 *             0 with those keys, and the data lands (RDM, two endpoints);
 *   namedrx:  every combination of FI_NAMED_RX_CTX with FI_MSG, FI_RMA,
 *             FI_TAGGED, FI_ATOMIC and FI_DIRECTED_RECV in hints->caps:
 *             each RDM entry carries FI_NAMED_RX_CTX in caps and in
 *             tx_attr->caps (the initiator names the receive context);
 *   nocap:    a bit that is no capability of any API version, alone or
 *             with FI_MSG, in hints->caps is -FI_ENODATA.
 *
 * Usage: getinfo_hints TEST|all [PROVIDER] (sockets by default). It
 * builds against upstream's headers too, so it runs on upstream libfabric.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "pair.h"

static const char *prov = "sockets";

/* fabtests' default mr_mode (FI_MR_LOCAL | FI_MR_ENDPOINT | basic map). */
#define FT_MR_MODE (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)

static struct fi_info *hints_for(enum fi_ep_type type, uint64_t caps, int mr_mode)
{
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup(prov);
	h->ep_attr->type = type;
	h->caps = caps;
	h->mode = ~0ULL;
	h->domain_attr->mr_mode = mr_mode;
	return h;
}

static void mr_old(void)
{
	const int olds[] = { FI_MR_SCALABLE, FI_MR_BASIC };
	for (size_t k = 0; k < sizeof(olds) / sizeof(olds[0]); k++) {
		struct fi_info *h = hints_for(FI_EP_UNSPEC, FI_RMA, olds[k]), *info = NULL;
		h->mode = 0;
		int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
		EXPECT(rc == 0 || rc == -FI_ENODATA, "mr_mode %d: fi_getinfo %d", olds[k], rc);
		int n = 0;
		for (struct fi_info *i = info; i; i = i->next, n++)
			EXPECT(i->domain_attr->mr_mode == olds[k],
			       "hints mr_mode %d: entry %d answers mr_mode %#x", olds[k], n,
			       (unsigned) i->domain_attr->mr_mode);
		printf("mrold: mr_mode %d: rc %d, %d entries\n", olds[k], rc, n);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
	/* fi_mr(3): the old values are set alone, never with mr_mode bits. */
	const int mixed[] = { FI_MR_BASIC | FI_MR_LOCAL, FI_MR_SCALABLE | FI_MR_VIRT_ADDR, FI_MR_BASIC | FI_MR_SCALABLE };
	for (size_t k = 0; k < sizeof(mixed) / sizeof(mixed[0]); k++) {
		struct fi_info *h = hints_for(FI_EP_UNSPEC, FI_RMA, mixed[k]), *info = NULL;
		int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
		EXPECT(rc == -FI_ENODATA, "mr_mode %#x: fi_getinfo %d, want -FI_ENODATA", (unsigned) mixed[k], rc);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
}

static void mr_echo(void)
{
	const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG };
	for (size_t k = 0; k < 2; k++) {
		struct fi_info *h = hints_for(types[k], FI_MSG | FI_RMA, FT_MR_MODE), *info = NULL;
		/* A provider name may stand for one endpoint type only. */
		int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
		EXPECT(rc == 0 || (rc == -FI_ENODATA && k > 0), "ep type %d: fi_getinfo %d", types[k], rc);
		int n = 0;
		for (struct fi_info *i = info; i; i = i->next, n++) {
			int m = i->domain_attr->mr_mode;
			EXPECT((m & ~FT_MR_MODE) == 0, "ep type %d entry %d: mr_mode %#x has bits not offered",
			       types[k], n, (unsigned) m);
			EXPECT((m & (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY)) == 0,
			       "ep type %d entry %d: mr_mode %#x keeps FI_MR_VIRT_ADDR/FI_MR_PROV_KEY "
			       "the provider does not need",
			       types[k], n, (unsigned) m);
		}
		printf("mrecho: ep type %d: %d entries\n", types[k], n);
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
}

static void mr_write(void)
{
	enum { REGIONS = 3, LEN = 4096 };
	struct side a = { 0 }, b = { 0 };
	open_pair(&a, &b, prov, FI_MSG | FI_RMA, FI_PROGRESS_UNSPEC, FT_MR_MODE, 0);
	int mode = info->domain_attr->mr_mode;
	printf("mrwrite: mr_mode answered %#x\n", (unsigned) mode);
	static char target[REGIONS][LEN], src[LEN];
	struct fid_mr *mr[REGIONS], *smr = NULL;
	void *sdesc = NULL;
	if (mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(domain, src, LEN, FI_WRITE, 0, 100, 0, &smr, NULL));
		if (mode & FI_MR_ENDPOINT) {
			CHECK(fi_mr_bind(smr, &a.ep->fid, 0));
			CHECK(fi_mr_enable(smr));
		}
		sdesc = fi_mr_desc(smr);
	}
	for (int i = 0; i < REGIONS; i++) {
		CHECK(fi_mr_reg(domain, target[i], LEN, FI_REMOTE_WRITE, 0, (uint64_t) i + 1, 0, &mr[i], NULL));
		if (mode & FI_MR_ENDPOINT) {
			CHECK(fi_mr_bind(mr[i], &b.ep->fid, 0));
			CHECK(fi_mr_enable(mr[i]));
		}
	}
	for (int i = 0; i < REGIONS; i++) {
		memset(src, 'a' + i, LEN);
		ssize_t rc;
		do {
			rc = fi_write(a.ep, src, LEN, sdesc, a.peer, 0, (uint64_t) i + 1, NULL);
			if (rc == -FI_EAGAIN)
				(void) fi_cq_read(a.cq, NULL, 0);
		} while (rc == -FI_EAGAIN);
		EXPECT_RC(rc, 0);
		if (rc)
			continue;
		/* Both sides are driven (manual progress providers need the
		 * target's too) until the initiator's completion is read and
		 * the data is in place. */
		struct fi_cq_tagged_entry e;
		ssize_t n = 0;
		double end = now_ms() + 10000;
		while (n != 1 && now_ms() < end) {
			n = fi_cq_read(a.cq, &e, 1);
			(void) fi_cq_read(b.cq, &e, 1);
			if (n == -FI_EAVAIL) {
				struct fi_cq_err_entry err = { 0 };
				(void) fi_cq_readerr(a.cq, &err, 0);
				EXPECT(0, "write to offset 0 with key %d: error completion %d (%s)", i + 1, err.err,
				       fi_strerror(err.err));
				break;
			}
		}
		EXPECT(n == 1 || n == -FI_EAVAIL, "write with key %d: no completion in 10 s", i + 1);
		while (memcmp(target[i], src, LEN) != 0 && now_ms() < end)
			(void) fi_cq_read(b.cq, &e, 1);
		EXPECT(memcmp(target[i], src, LEN) == 0, "region %d (key %d) does not hold the data written", i,
		       i + 1);
	}
	for (int i = 0; i < REGIONS; i++)
		fi_close(&mr[i]->fid);
	if (smr)
		fi_close(&smr->fid);
	close_pair(&a, &b);
}

static void named_rx(void)
{
	const uint64_t bits[] = { FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_DIRECTED_RECV };
	const unsigned nbits = sizeof(bits) / sizeof(bits[0]);
	int answered = 0;
	for (unsigned combo = 0; combo < (1u << nbits); combo++) {
		uint64_t caps = FI_NAMED_RX_CTX;
		for (unsigned k = 0; k < nbits; k++)
			if (combo & (1u << k))
				caps |= bits[k];
		struct fi_info *h = hints_for(FI_EP_RDM, caps, FT_MR_MODE), *info = NULL;
		int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
		EXPECT(rc == 0 || rc == -FI_ENODATA, "caps %#llx: fi_getinfo %d", (unsigned long long) caps, rc);
		for (struct fi_info *i = info; i; i = i->next) {
			EXPECT((i->caps & caps) == caps, "caps %#llx: entry caps %#llx lack some",
			       (unsigned long long) caps, (unsigned long long) i->caps);
			EXPECT(i->tx_attr->caps & FI_NAMED_RX_CTX,
			       "caps %#llx: tx_attr->caps %#llx lack FI_NAMED_RX_CTX", (unsigned long long) caps,
			       (unsigned long long) i->tx_attr->caps);
		}
		answered += info != NULL;
		fi_freeinfo(info);
		fi_freeinfo(h);
	}
	printf("namedrx: %d of %u combinations answered\n", answered, 1u << nbits);
}

static void no_cap(void)
{
	/* Bits no API version (1.x or 2.x) gives a capability. */
	const int bits[] = { 14, 15, 60, 61, 62, 63 };
	for (size_t k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
		for (int with_msg = 0; with_msg < 2; with_msg++) {
			uint64_t caps = (1ULL << bits[k]) | (with_msg ? FI_MSG : 0);
			struct fi_info *h = hints_for(FI_EP_UNSPEC, caps, FT_MR_MODE), *info = NULL;
			int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
			EXPECT(rc == -FI_ENODATA, "caps %#llx (bit %d): fi_getinfo %d, want -FI_ENODATA",
			       (unsigned long long) caps, bits[k], rc);
			fi_freeinfo(info);
			fi_freeinfo(h);
		}
	}
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	if (argc > 2)
		prov = argv[2];
	int all = !strcmp(which, "all"), ran = 0;
	if (all || !strcmp(which, "mrold"))
		mr_old(), ran++;
	if (all || !strcmp(which, "mrecho"))
		mr_echo(), ran++;
	if (all || !strcmp(which, "mrwrite"))
		mr_write(), ran++;
	if (all || !strcmp(which, "namedrx"))
		named_rx(), ran++;
	if (all || !strcmp(which, "nocap"))
		no_cap(), ran++;
	if (!ran) {
		fprintf(stderr, "usage: %s mrold|mrecho|mrwrite|namedrx|nocap|all [provider]\n", argv[0]);
		return 2;
	}
	printf("%s: %d checks, %d failed\n", prov, checks, failures);
	return failures ? 1 : 0;
}
