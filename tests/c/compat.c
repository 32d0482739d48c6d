/*
 * The entry points of every ABI node: fi_getinfo/fi_dupinfo/fi_freeinfo at
 * FABRIC_1.0, 1.1, 1.2, 1.3, 1.7, 1.8 and 1.9 (the default) and fi_fabric at
 * FABRIC_1.0 accept that node's attribute layouts, and fi_fabric2@FABRIC_1.8
 * opens the fabric of an entry. Old-layout hints are placed at the very end
 * of a page followed by an inaccessible page, so reading one byte past an
 * old struct crashes the test.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include "check.h"

/* Sizes of each struct in each ABI node (fabric(7) "ABI CHANGES"), and an
 * API version a program built against that node's headers passes. */
struct layout {
	const char *node;
	size_t info, tx, rx, ep, domain, fabric;
	uint32_t version;
};

static const struct layout layouts[] = {
	{ "FABRIC_1.0", 112, 72, 64, 80, 120, 28, FI_VERSION(1, 4) },
	{ "FABRIC_1.1", 112, 72, 64, 96, 184, 32, FI_VERSION(1, 4) },
	{ "FABRIC_1.2", 120, 72, 64, 96, 184, 32, FI_VERSION(1, 4) },
	{ "FABRIC_1.3", 120, 80, 64, 96, 192, 32, FI_VERSION(1, 17) },
	{ "FABRIC_1.7", 120, 80, 64, 96, 200, 32, FI_VERSION(1, 20) },
	{ "FABRIC_1.8", 120, 80, 64, 96, 208, 32, FI_VERSION(2, 0) },
	{ "FABRIC_1.9", 120, 80, 64, 96, 224, 32, FI_VERSION(2, 5) },
};

/* A zeroed object of `size` bytes that ends exactly at a guard page. */
static void *guarded(size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	mprotect(p + page, page, PROT_NONE);
	memset(p, 0, page);
	return p + page - size;
}

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);
typedef void (*freeinfo_fn)(struct fi_info *);
typedef int (*fabric_fn)(struct fi_fabric_attr *, struct fid_fabric **, void *);

/*
 * fi_cq_readerr writes as much of the application's fi_cq_err_entry as its
 * API version has: 72 bytes before 1.5, 80 (err_data_size) before 1.20, 88
 * (src_addr) from 1.20. The buffer ends at a guard page; a cancelled
 * receive makes the error entry.
 */
static void cq_err_entry_sizes(void *lib)
{
	static const struct { uint32_t version; size_t size; } cases[] = {
		{ FI_VERSION(1, 4), 72 }, { FI_VERSION(1, 17), 80 }, { FI_VERSION(1, 20), 88 },
		{ FI_VERSION(2, 6), 88 },
	};
	getinfo_fn gi = (getinfo_fn) dlvsym(lib, "fi_getinfo", "FABRIC_1.9");
	freeinfo_fn fi = (freeinfo_fn) dlvsym(lib, "fi_freeinfo", "FABRIC_1.9");
	fabric_fn fab = (fabric_fn) dlvsym(lib, "fi_fabric", "FABRIC_1.1");
	typedef struct fi_info *(*alloc_fn)(const struct fi_info *);
	alloc_fn di = (alloc_fn) dlvsym(lib, "fi_dupinfo", "FABRIC_1.9");

	EXPECT(gi && fi && fab && di, "default symbols");
	if (!gi || !fi || !fab || !di)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fi_info *hints = di(NULL), *info = NULL;
		struct fid_fabric *fabric = NULL;
		struct fid_domain *domain = NULL;
		struct fid_cq *cq = NULL;
		struct fid_av *av = NULL;
		struct fid_ep *ep = NULL;
		struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 16 };
		struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
		struct fi_cq_tagged_entry comp;
		char buf[16];
		int ctx, rc;

		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG;
		hints->fabric_attr->prov_name = strdup("sockets");
		rc = gi(cases[i].version, "127.0.0.1", NULL, 0, hints, &info);
		EXPECT(rc == 0, "fi_getinfo(%#x): %d", cases[i].version, rc);
		fi(hints);
		if (rc)
			continue;
		rc = fab(info->fabric_attr, &fabric, NULL);
		if (!rc) rc = fi_domain(fabric, info, &domain, NULL);
		if (!rc) rc = fi_cq_open(domain, &cq_attr, &cq, NULL);
		if (!rc) rc = fi_av_open(domain, &av_attr, &av, NULL);
		if (!rc) rc = fi_endpoint(domain, info, &ep, NULL);
		if (!rc) rc = fi_ep_bind(ep, &av->fid, 0);
		if (!rc) rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
		if (!rc) rc = fi_enable(ep);
		if (!rc) rc = (int) fi_recv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx);
		if (!rc) rc = fi_cancel(&ep->fid, &ctx);
		EXPECT(rc == 0, "API %#x: setup and cancel: %d", cases[i].version, rc);
		if (!rc) {
			struct fi_cq_err_entry *e = guarded(cases[i].size);
			ssize_t n = fi_cq_read(cq, &comp, 1);
			EXPECT(n == -FI_EAVAIL, "API %#x: fi_cq_read %zd", cases[i].version, n);
			/* What the 1.20 inline wrapper of the 2.x headers does. */
			if (cases[i].size > 80)
				e->src_addr = 12345;
			n = cq->ops->readerr(cq, e, 0);
			EXPECT(n == 1 && e->err == FI_ECANCELED && e->op_context == &ctx,
			       "API %#x: fi_cq_readerr %zd err %d", cases[i].version, n, e->err);
			if (cases[i].size > 80)
				EXPECT(e->src_addr == FI_ADDR_NOTAVAIL, "API %#x: src_addr %#llx",
				       cases[i].version, (unsigned long long) e->src_addr);
		}
		if (ep) fi_close(&ep->fid);
		if (av) fi_close(&av->fid);
		if (cq) fi_close(&cq->fid);
		if (domain) fi_close(&domain->fid);
		if (fabric) fi_close(&fabric->fid);
		fi(info);
	}
}

int main(void)
{
	void *lib = dlopen("libfabric.so.1", RTLD_NOW);
	EXPECT(lib != NULL, "dlopen: %s", dlerror());
	if (!lib)
		return 1;

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		getinfo_fn gi = (getinfo_fn) dlvsym(lib, "fi_getinfo", l->node);
		dupinfo_fn di = (dupinfo_fn) dlvsym(lib, "fi_dupinfo", l->node);
		freeinfo_fn fi = (freeinfo_fn) dlvsym(lib, "fi_freeinfo", l->node);
		EXPECT(gi && di && fi, "symbols at %s", l->node);
		if (!gi || !di || !fi)
			continue;

		/* Old-layout hints asking for the sockets RDM entry on loopback. */
		struct fi_info *h = guarded(l->info);
		struct fi_ep_attr *ep = guarded(l->ep);
		struct fi_fabric_attr *fab = guarded(l->fabric);
		h->tx_attr = guarded(l->tx);
		h->rx_attr = guarded(l->rx);
		h->ep_attr = ep;
		h->domain_attr = guarded(l->domain);
		h->fabric_attr = fab;
		h->caps = FI_MSG;
		ep->type = FI_EP_RDM;
		fab->prov_name = (char *) "sockets";

		struct fi_info *res = NULL;
		int rc = gi(l->version, "127.0.0.1", NULL, 0, h, &res);
		EXPECT(rc == 0 && res, "%s fi_getinfo: %d", l->node, rc);
		if (rc == 0) {
			EXPECT(res->ep_attr->type == FI_EP_RDM, "%s: entry type", l->node);
			EXPECT(res->fabric_attr->prov_name &&
			       strcmp(res->fabric_attr->prov_name, "sockets") == 0, "%s: prov_name", l->node);
			/* Old applications get the old mr_mode enum (API < 1.5). */
			EXPECT(l->version >= FI_VERSION(1, 5) ||
			       res->domain_attr->mr_mode == FI_MR_BASIC ||
			       res->domain_attr->mr_mode == FI_MR_SCALABLE,
			       "%s: mr_mode %d is not an old enum value", l->node, res->domain_attr->mr_mode);
			EXPECT(res->fabric_attr->api_version == l->version, "%s: api_version %#x",
			       l->node, res->fabric_attr->api_version);
			struct fi_info *d = di(res);
			EXPECT(d && d->fabric_attr->prov_name != res->fabric_attr->prov_name &&
			       strcmp(d->fabric_attr->prov_name, "sockets") == 0, "%s: fi_dupinfo copies strings", l->node);
			fi(d);
			fi(res);
		}

		/* fi_dupinfo(NULL) at the old version is complete and zeroed. */
		struct fi_info *z = di(NULL);
		EXPECT(z && z->tx_attr && z->rx_attr && z->ep_attr && z->domain_attr && z->fabric_attr &&
		       z->caps == 0, "%s: fi_dupinfo(NULL)", l->node);
		fi(z);

		/* fi_dupinfo of an old-layout info built by hand. */
		h->fabric_attr->name = (char *) "127.0.0.0/8";
		struct fi_info *c = di(h);
		EXPECT(c && c->fabric_attr->name && strcmp(c->fabric_attr->name, "127.0.0.0/8") == 0 &&
		       c->fabric_attr->name != h->fabric_attr->name, "%s: fi_dupinfo of old layout", l->node);
		fi(c);
	}

	/* fi_fabric@FABRIC_1.0 takes the attr without api_version. */
	{
		fabric_fn f10 = (fabric_fn) dlvsym(lib, "fi_fabric", "FABRIC_1.0");
		fabric_fn f11 = (fabric_fn) dlvsym(lib, "fi_fabric", "FABRIC_1.1");
		EXPECT(f10 && f11, "fi_fabric versions");
		if (f10) {
			struct fi_fabric_attr *a = guarded(28);
			struct fid_fabric *fabric = NULL;
			a->prov_name = (char *) "sockets";
			a->name = (char *) "127.0.0.0/8";
			EXPECT(f10(a, &fabric, NULL) == 0 && fabric, "fi_fabric@FABRIC_1.0");
			if (fabric) {
				EXPECT(fabric->api_version == FI_VERSION(1, 0), "api_version %#x", fabric->api_version);
				fi_close(&fabric->fid);
			}
		}
	}
	/* fi_fabric2@FABRIC_1.8 opens the fabric of an entry, at its API. */
	{
		typedef int (*fabric2_fn)(struct fi_info *, struct fid_fabric **, uint64_t, void *);
		fabric2_fn f2 = (fabric2_fn) dlvsym(lib, "fi_fabric2", "FABRIC_1.8");
		getinfo_fn gi = (getinfo_fn) dlvsym(lib, "fi_getinfo", "FABRIC_1.8");
		freeinfo_fn fi = (freeinfo_fn) dlvsym(lib, "fi_freeinfo", "FABRIC_1.8");
		struct fi_info *res = NULL;
		struct fid_fabric *fabric = NULL;
		EXPECT(f2 && gi && fi, "fi_fabric2@FABRIC_1.8");
		if (f2 && gi && fi && gi(FI_VERSION(2, 1), "127.0.0.1", NULL, 0, NULL, &res) == 0) {
			EXPECT(f2(NULL, &fabric, 0, NULL) == -FI_EINVAL, "fi_fabric2(NULL info)");
			EXPECT(f2(res, NULL, 0, NULL) == -FI_EINVAL, "fi_fabric2(NULL fabric)");
			EXPECT(f2(res, &fabric, 1, NULL) == -FI_EBADFLAGS, "fi_fabric2 flags");
			EXPECT(f2(res, &fabric, 0, &failures) == 0 && fabric, "fi_fabric2");
			if (fabric) {
				EXPECT(fabric->api_version == FI_VERSION(2, 1), "fi_fabric2 api_version %#x",
				       fabric->api_version);
				EXPECT(fabric->fid.context == &failures, "fi_fabric2 context");
				fi_close(&fabric->fid);
			}
			fi(res);
		}
	}
	cq_err_entry_sizes(lib);
	printf("compat: %d failures\n", failures);
	return failures ? 1 : 0;
}
