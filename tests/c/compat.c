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

static int failures;

#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) { \
			failures++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

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
	{ "FABRIC_1.7", 120, 80, 64, 96, 200, 32, FI_VERSION(1, 17) },
	{ "FABRIC_1.8", 120, 80, 64, 96, 208, 32, FI_VERSION(1, 17) },
	{ "FABRIC_1.9", 120, 80, 64, 96, 224, 32, FI_VERSION(1, 17) },
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
		if (f2 && gi && fi && gi(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, NULL, &res) == 0) {
			EXPECT(f2(NULL, &fabric, 0, NULL) == -FI_EINVAL, "fi_fabric2(NULL info)");
			EXPECT(f2(res, NULL, 0, NULL) == -FI_EINVAL, "fi_fabric2(NULL fabric)");
			EXPECT(f2(res, &fabric, 1, NULL) == -FI_EBADFLAGS, "fi_fabric2 flags");
			EXPECT(f2(res, &fabric, 0, &failures) == 0 && fabric, "fi_fabric2");
			if (fabric) {
				EXPECT(fabric->api_version == FI_VERSION(1, 17), "fi_fabric2 api_version %#x",
				       fabric->api_version);
				EXPECT(fabric->fid.context == &failures, "fi_fabric2 context");
				fi_close(&fabric->fid);
			}
			fi(res);
		}
	}
	printf("compat: %d failures\n", failures);
	return failures ? 1 : 0;
}
