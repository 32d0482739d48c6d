/*
 * A program written for libfabric 2.6's API (docs/api-2.2-2.6.md): it uses
 * what 2.2-2.6 added to the headers, compiled against ours, and runs on our
 * library. Values are checked at compile time; at run time each addition
 * does what the library documents for it:
 *   - FI_SOCKADDR_IP hints select the IPv4 entries for 127.0.0.1, with
 *     FI_RESCAN accepted by fi_getinfo;
 *   - fi_tostr names FI_SOCKADDR_IP, wait objects and CQ wait conditions,
 *     and FI_TYPE_VERSION is the headers' release;
 *   - fi_domain_attr carries 2.5's counter limits;
 *   - FI_FIREWALL_ADDR on every AV insert call is refused (-FI_EBADFLAGS);
 *   - fi_control(FI_GET_FD) is -FI_ENOSYS, fi_getopt(FI_OPT_FIREWALL_ADDR)
 *     and the new EFA options (not an EFA endpoint) -FI_ENOPROTOOPT.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_ext.h>
#include <stdbool.h>
#include "check.h"

_Static_assert(FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION == 6, "API 2.6");
_Static_assert(FI_RESCAN == (1ULL << 35), "FI_RESCAN");
_Static_assert(FI_FIREWALL_ADDR == (1ULL << 42), "FI_FIREWALL_ADDR");
_Static_assert(FI_SOCKADDR_IP == 17, "FI_SOCKADDR_IP");
_Static_assert(FI_GET_FD == 20, "FI_GET_FD");
_Static_assert(FI_OPT_FIREWALL_ADDR == 20, "FI_OPT_FIREWALL_ADDR");
_Static_assert(FI_EFIREWALLADDR == 271 && FI_ERRNO_MAX == 272, "FI_EFIREWALLADDR");
_Static_assert(FI_OPT_EFA_HOMOGENEOUS_PEERS == -FI_PROV_SPECIFIC_EFA + 7 &&
	       FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV == -FI_PROV_SPECIFIC_EFA + 8, "EFA options");
_Static_assert(FI_TYPE_CQ_WAIT_COND == 34 && FI_TYPE_WAIT_OBJ == 35, "fi_type");
_Static_assert(offsetof(struct fi_domain_attr, max_cntr_value) == 208 &&
	       offsetof(struct fi_domain_attr, max_err_cntr_value) == 216 &&
	       sizeof(struct fi_domain_attr) == 224, "fi_domain_attr of ABI 1.9");

static void tostr_is(const void *data, enum fi_type t, const char *want)
{
	const char *s = fi_tostr(data, t);
	EXPECT(s && !strcmp(s, want), "fi_tostr(type %d): '%s', want '%s'", (int) t,
	       s ? s : "(null)", want);
}

int main(void)
{
	struct fi_info *hints, *info = NULL, *i;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fi_av_attr av_attr;
	struct sockaddr_in peer;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	uint32_t v = fi_version();
	int fmt = FI_SOCKADDR_IP, wait = FI_WAIT_FD, cond = FI_CQ_COND_THRESHOLD, fd = -1;
	size_t len = sizeof(fd);
	char release[32];

	EXPECT(v == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "fi_version %u.%u", FI_MAJOR(v),
	       FI_MINOR(v));
	snprintf(release, sizeof(release), "%d.%d.%d", FI_MAJOR_VERSION, FI_MINOR_VERSION,
		 FI_REVISION_VERSION);
	tostr_is(&v, FI_TYPE_VERSION, release);
	tostr_is(&fmt, FI_TYPE_ADDR_FORMAT, "FI_SOCKADDR_IP");
	tostr_is(&wait, FI_TYPE_WAIT_OBJ, "FI_WAIT_FD");
	tostr_is(&cond, FI_TYPE_CQ_WAIT_COND, "FI_CQ_COND_THRESHOLD");

	hints = fi_allocinfo();
	if (!hints)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->addr_format = FI_SOCKADDR_IP;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("sockets");
	CHECK(fi_getinfo(FI_VERSION(2, 6), "127.0.0.1", NULL, FI_RESCAN, hints, &info));
	for (i = info; i; i = i->next)
		EXPECT(i->addr_format == FI_SOCKADDR_IN, "FI_SOCKADDR_IP hints gave format %u",
		       i->addr_format);
	EXPECT(info->domain_attr->max_cntr_value == 0 ||
		       info->domain_attr->max_err_cntr_value <= info->domain_attr->max_cntr_value,
	       "counter limits %llu / %llu",
	       (unsigned long long) info->domain_attr->max_cntr_value,
	       (unsigned long long) info->domain_attr->max_err_cntr_value);

	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	memset(&av_attr, 0, sizeof(av_attr));
	av_attr.type = FI_AV_TABLE;
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	memset(&peer, 0, sizeof(peer));
	peer.sin_family = AF_INET;
	peer.sin_port = htons(9);
	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	EXPECT_RC(fi_av_insert(av, &peer, 1, &addr, FI_FIREWALL_ADDR, NULL), -FI_EBADFLAGS);
	EXPECT_RC(fi_av_insertsvc(av, "127.0.0.1", "9", &addr, FI_FIREWALL_ADDR, NULL), -FI_EBADFLAGS);
	EXPECT_RC(fi_av_insertsym(av, "127.0.0.1", 1, "9", 1, &addr, FI_FIREWALL_ADDR, NULL),
		  -FI_EBADFLAGS);
	EXPECT(addr == FI_ADDR_NOTAVAIL, "a refused insert wrote fi_addr %llu", (unsigned long long) addr);
	/* Without the flag the same address goes in. */
	EXPECT_RC(fi_av_insert(av, &peer, 1, &addr, 0, NULL), 1);

	CHECK(fi_endpoint(domain, info, &ep, NULL));
	EXPECT_RC(fi_control(&ep->fid, FI_GET_FD, &fd), -FI_ENOSYS);
	EXPECT_RC(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_FIREWALL_ADDR, &fd, &len), -FI_ENOPROTOOPT);
	{
		bool on = true;
		EXPECT_RC(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_HOMOGENEOUS_PEERS, &on, sizeof(on)),
			  -FI_ENOPROTOOPT);
		EXPECT_RC(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV, &on,
				    sizeof(on)), -FI_ENOPROTOOPT);
	}

	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("api26: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
