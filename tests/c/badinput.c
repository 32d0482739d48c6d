/*
 * Every exported function with NULL and invalid arguments: each must
 * return the documented negative code (or NULL) and never crash. Also the
 * object vtables reached through the inline wrappers with invalid objects.
 * Run plainly and under valgrind (tests/c/t-badinput.sh).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include "check.h"

static struct fi_provider demo_prov = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "badinput",
};

int main(void)
{
	struct fi_info *info = NULL, *hints;
	struct fid_fabric *fabric = NULL;
	struct fi_fabric_attr fattr;
	struct fid *fid = NULL;
	struct fi_param *params = NULL;
	int count = 0, ival;
	char buf[64];
	uint64_t u64 = 0, showtime = 0;

	/* fi_getinfo */
	EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, NULL), -FI_EINVAL);
	EXPECT_RC(fi_getinfo(FI_VERSION(99, 0), NULL, NULL, 0, NULL, &info), -FI_ENOSYS);
	EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 1ULL << 62, NULL, &info), -FI_EBADFLAGS);
	EXPECT(info == NULL, "info written on failure");
	hints = fi_allocinfo();
	EXPECT(hints != NULL, "fi_allocinfo");
	free(hints->tx_attr);
	hints->tx_attr = NULL;
	free(hints->rx_attr);
	hints->rx_attr = NULL;
	free(hints->ep_attr);
	hints->ep_attr = NULL;
	free(hints->domain_attr);
	hints->domain_attr = NULL;
	free(hints->fabric_attr);
	hints->fabric_attr = NULL;
	/* Hints without any attribute struct are valid. */
	{
		int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
		EXPECT(rc == 0 || rc == -FI_ENODATA, "NULL attrs in hints: %d", rc);
		fi_freeinfo(info);
		info = NULL;
	}
	fi_freeinfo(hints);
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("no-such-provider");
	EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
	/* A network provider cannot resolve it (shm, which resolves nothing,
	 * would answer with the name as an address, as upstream's does). */
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("sockets");
	EXPECT_RC(fi_getinfo(FI_VERSION(1, 17), "no-such-host.invalid", "1", 0, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
	fi_freeinfo(NULL);

	/* fi_dupinfo */
	info = fi_dupinfo(NULL);
	EXPECT(info && info->tx_attr && info->rx_attr && info->ep_attr && info->domain_attr &&
	       info->fabric_attr, "fi_dupinfo(NULL) is complete");
	fi_freeinfo(info);

	/* fi_fabric */
	EXPECT_RC(fi_fabric(NULL, &fabric, NULL), -FI_EINVAL);
	memset(&fattr, 0, sizeof(fattr));
	EXPECT_RC(fi_fabric(&fattr, &fabric, NULL), -FI_EINVAL);
	fattr.prov_name = (char *) "no-such-provider";
	EXPECT_RC(fi_fabric(&fattr, &fabric, NULL), -FI_ENODEV);
	fattr.prov_name = (char *) "sockets";
	EXPECT_RC(fi_fabric(&fattr, NULL, NULL), -FI_EINVAL);
	EXPECT(fabric == NULL, "fabric written on failure");

	/* fi_open */
	EXPECT_RC(fi_open(FI_VERSION(1, 17), "mr_cache", NULL, 0, 0, &fid, NULL), -FI_ENOSYS);
	EXPECT_RC(fi_open(FI_VERSION(1, 17), "no-such-object", NULL, 0, 0, &fid, NULL), -FI_ENOSYS);
	EXPECT_RC(fi_open(FI_VERSION(1, 17), NULL, NULL, 0, 0, &fid, NULL), -FI_EINVAL);
	EXPECT_RC(fi_open(FI_VERSION(1, 17), "mr_cache", NULL, 0, 0, NULL, NULL), -FI_EINVAL);

	/* fi_version, fi_strerror */
	EXPECT(fi_version() == FI_VERSION(2, 6), "fi_version %#x", fi_version());
	EXPECT(fi_strerror(0) != NULL && fi_strerror(-FI_ETRUNC) != NULL && fi_strerror(1 << 30) != NULL,
	       "fi_strerror returns text for every number");
	EXPECT(strcmp(fi_strerror(-FI_ETRUNC), "Truncation error") == 0, "FI_ETRUNC text");

	/* fi_tostr, fi_tostr_r */
	EXPECT(fi_tostr(NULL, FI_TYPE_INFO) == NULL, "fi_tostr(NULL)");
	EXPECT(strcmp(fi_tostr(&u64, (enum fi_type) 9999), "Unknown type") == 0, "unknown fi_type");
	ival = 12345;
	EXPECT(strcmp(fi_tostr(&ival, FI_TYPE_EP_TYPE), "Unknown") == 0, "out-of-range enum");
	EXPECT(fi_tostr_r(buf, 0, &u64, FI_TYPE_CAPS) == NULL, "fi_tostr_r with len 0");
	EXPECT(fi_tostr_r(NULL, 16, &u64, FI_TYPE_CAPS) == NULL, "fi_tostr_r with NULL buf");
	EXPECT(fi_tostr_r(buf, sizeof(buf), NULL, FI_TYPE_CAPS) == NULL, "fi_tostr_r with NULL data");

	/* parameters */
	EXPECT_RC(fi_getparams(NULL, &count), -FI_EINVAL);
	EXPECT_RC(fi_getparams(&params, NULL), -FI_EINVAL);
	fi_freeparams(NULL);
	EXPECT_RC(fi_param_define(&demo_prov, NULL, FI_PARAM_INT, "x"), -FI_EINVAL);
	EXPECT_RC(fi_param_define(&demo_prov, "bad_type", (enum fi_param_type) 77, "x"), -FI_EINVAL);
	EXPECT_RC(fi_param_get(&demo_prov, "never_defined", &ival), -FI_ENOENT);
	EXPECT_RC(fi_param_get(&demo_prov, NULL, &ival), -FI_EINVAL);
	EXPECT_RC(fi_param_define(&demo_prov, "count", FI_PARAM_INT, "a count of %d", 3), 0);
	EXPECT_RC(fi_param_get(&demo_prov, "count", NULL), -FI_EINVAL);

	/* logging */
	EXPECT(fi_log_enabled(NULL, FI_LOG_WARN, FI_LOG_CORE) == 0, "logging is off by default");
	EXPECT(fi_log_enabled(&demo_prov, (enum fi_log_level) 99, (enum fi_log_subsys) 99) == 0,
	       "out-of-range level");
	EXPECT(fi_log_ready(&demo_prov, FI_LOG_WARN, FI_LOG_CORE, NULL) == 0, "fi_log_ready(NULL)");
	EXPECT(fi_log_ready(&demo_prov, FI_LOG_WARN, FI_LOG_CORE, &showtime) == 0, "fi_log_ready");
	fi_log(NULL, FI_LOG_WARN, FI_LOG_CORE, NULL, 0, NULL);
	fi_log(&demo_prov, FI_LOG_WARN, FI_LOG_CORE, __func__, __LINE__, "%s", "not printed");

	/* A real fabric, then invalid objects through its vtables. */
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info) == 0) {
		struct fid_domain *domain = NULL;
		struct fid_cq *cq = NULL;
		struct fi_cq_attr cq_attr;
		struct fid_ep *ep = NULL;

		EXPECT_RC(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
		EXPECT_RC(fi_domain(fabric, info, NULL, NULL), -FI_EINVAL);
		EXPECT_RC(fi_domain(fabric, NULL, &domain, NULL), -FI_EINVAL);
		EXPECT_RC(fi_domain(fabric, info, &domain, NULL), 0);
		memset(&cq_attr, 0, sizeof(cq_attr));
		cq_attr.format = (enum fi_cq_format) 42;
		EXPECT_RC(fi_cq_open(domain, &cq_attr, &cq, NULL), -FI_EINVAL);
		EXPECT_RC(fi_cq_open(domain, NULL, &cq, NULL), -FI_EINVAL);
		cq_attr.format = FI_CQ_FORMAT_TAGGED;
		cq_attr.flags = 1ULL << 60;
		EXPECT_RC(fi_cq_open(domain, &cq_attr, &cq, NULL), -FI_EBADFLAGS);
		cq_attr.flags = 0;
		EXPECT_RC(fi_cq_open(domain, &cq_attr, &cq, NULL), 0);
		EXPECT_RC(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
		EXPECT_RC(fi_cq_read(cq, buf, 0), -FI_EAGAIN);
		EXPECT_RC(fi_cq_readerr(cq, NULL, 0), -FI_EINVAL);
		EXPECT_RC(fi_endpoint(domain, info, &ep, NULL), 0);
		/* Binding a domain to an endpoint is not a valid bind. */
		EXPECT_RC(fi_ep_bind(ep, &domain->fid, 0), -FI_EINVAL);
		EXPECT_RC(fi_ep_bind(ep, &cq->fid, 1ULL << 40), -FI_EBADFLAGS);
		EXPECT_RC(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
		/* Not enabled yet (no AV). */
		EXPECT_RC(fi_enable(ep), -FI_ENOAV);
		EXPECT_RC(fi_send(ep, NULL, 10, NULL, 0, NULL), -FI_EINVAL);
		EXPECT_RC(fi_recvmsg(ep, NULL, 0), -FI_EINVAL);
		/* fi_ep_alias: needs a direction; the endpoint outlives its aliases. */
		{
			struct fid_ep *alias = NULL;
			uint64_t f = FI_TRANSMIT;
			EXPECT_RC(fi_ep_alias(ep, &alias, FI_COMPLETION), -FI_EINVAL);
			EXPECT_RC(fi_ep_alias(ep, &alias, FI_TRANSMIT | FI_COMPLETION), 0);
			EXPECT(alias && alias != ep && alias->fid.fclass == FI_CLASS_EP, "alias endpoint");
			EXPECT_RC(fi_control(&alias->fid, FI_GETOPSFLAG, &f), 0);
			EXPECT(f == (FI_TRANSMIT | FI_COMPLETION), "alias op flags %#llx", (unsigned long long) f);
			EXPECT_RC(fi_close(&ep->fid), -FI_EBUSY);
			EXPECT_RC(fi_close(&alias->fid), 0);
		}
		/* Closing a bound CQ is refused; closing in order works. */
		EXPECT_RC(fi_close(&cq->fid), -FI_EBUSY);
		EXPECT_RC(fi_close(&domain->fid), -FI_EBUSY);
		EXPECT_RC(fi_close(&ep->fid), 0);
		EXPECT_RC(fi_close(&cq->fid), 0);
		EXPECT_RC(fi_close(&domain->fid), 0);
		EXPECT_RC(fi_close(&fabric->fid), 0);
		fi_freeinfo(info);
	} else {
		EXPECT(0, "no sockets entry on 127.0.0.1");
	}
	fi_freeinfo(hints);

	printf("badinput: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
