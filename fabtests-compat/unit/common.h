/*
 * Shared helpers of the fabtests-compat unit tests: option parsing in
 * fabtests' style (-p provider, -e ep type, -s local address, default
 * 127.0.0.1; -6 a local IPv6 address, default ::1: a provider whose
 * devices serve no loopback address, verbs, is given its device's) and
 * opening a fabric, domain and endpoint there.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_FT_COMMON_H
#define OXI_FT_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

static int ft_failures, ft_checks;
static const char *ft_prov = "sockets";
static const char *ft_node = "127.0.0.1"; /* -s */
static const char *ft_node6 = "::1"; /* -6 */
static enum fi_ep_type ft_ep_type = FI_EP_RDM;
static struct fi_info *ft_info;
static struct fid_fabric *ft_fabric;
static struct fid_domain *ft_domain;

#define FT_CHECK(cond, ...) \
	do { \
		ft_checks++; \
		if (!(cond)) { \
			ft_failures++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

#define FT_RC(expr, want) \
	do { \
		long ft_rc_ = (long) (expr); \
		FT_CHECK(ft_rc_ == (long) (want), "%s = %ld (%s), want %ld", #expr, ft_rc_, \
			 fi_strerror((int) -ft_rc_), (long) (want)); \
	} while (0)

static inline double ft_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void ft_parse(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:e:s:6:")) != -1) {
		if (c == 'p')
			ft_prov = optarg;
		else if (c == 's')
			ft_node = optarg;
		else if (c == '6')
			ft_node6 = optarg;
		else if (c == 'e')
			ft_ep_type = !strcmp(optarg, "msg") ? FI_EP_MSG :
				     !strcmp(optarg, "dgram") ? FI_EP_DGRAM : FI_EP_RDM;
	}
}

/* Opens fabric and domain for the provider's entry on ft_node. */
static inline int ft_open(void)
{
	struct fi_info *hints = fi_allocinfo();
	int rc;
	hints->fabric_attr->prov_name = strdup(ft_prov);
	hints->ep_attr->type = ft_ep_type;
	hints->caps = FI_MSG;
	rc = fi_getinfo(FI_VERSION(1, 17), ft_node, NULL, 0, hints, &ft_info);
	fi_freeinfo(hints);
	if (rc) {
		printf("fi_getinfo: %s\n", fi_strerror(-rc));
		return rc;
	}
	rc = fi_fabric(ft_info->fabric_attr, &ft_fabric, NULL);
	if (!rc)
		rc = fi_domain(ft_fabric, ft_info, &ft_domain, NULL);
	return rc;
}

static inline void ft_close(void)
{
	if (ft_domain)
		fi_close(&ft_domain->fid);
	if (ft_fabric)
		fi_close(&ft_fabric->fid);
	fi_freeinfo(ft_info);
}

static inline int ft_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, ft_checks, ft_failures);
	return ft_failures ? 1 : 0;
}

#endif
