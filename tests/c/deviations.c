/*
 * Smaller behaviours the man pages (and upstream's providers) pin, each
 * checked on its own:
 *
 *   connect:  fi_connect on an MSG endpoint that was never enabled
 *             enables it (fi_cm(3)): it connects to a listening passive
 *             endpoint and both sides see FI_CONNECTED;
 *   crossdom: binding a CQ, counter or AV of another domain to an
 *             endpoint is -FI_EINVAL;
 *   eqsmall:  fi_eq_read with a buffer smaller than the entry returns
 *             -FI_ETOOSMALL and leaves the entry queued;
 *   strerror: fi_cq_strerror of a truncated receive's error entry
 *             explains it (not "Success");
 *   huge:     a CQ of SIZE_MAX entries is -FI_EINVAL, an AV of count
 *             SIZE_MAX fails (-FI_EINVAL or -FI_ENOMEM), without
 *             allocating either.
 *
 * Run with the provider as argument (sockets by default; `tcp` too for
 * upstream's). Every wait is bounded.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include "check.h"

static const char *prov = "sockets";

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static struct fi_info *get_info(enum fi_ep_type type, const char *node, uint64_t flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = type;
	hints->caps = FI_MSG;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	int rc = fi_getinfo(FI_VERSION(1, 17), node, node ? "0" : NULL, flags, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		die("fi_getinfo", rc);
	return info;
}

static void connect_implicit(void)
{
	struct fi_info *info = get_info(FI_EP_MSG, "127.0.0.1", FI_SOURCE);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *srv = NULL, *cli;
	struct fid_cq *cq;
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq, NULL));
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	char addr[128];
	size_t alen = sizeof(addr);
	CHECK(fi_getname(&pep->fid, addr, &alen));

	struct fi_info *ci = get_info(FI_EP_MSG, NULL, 0);
	CHECK(fi_endpoint(domain, ci, &cli, NULL));
	CHECK(fi_ep_bind(cli, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(cli, &eq->fid, 0));
	/* No fi_enable. */
	EXPECT_RC(fi_connect(cli, addr, NULL, 0), 0);

	int connected = 0;
	double end = now() + 10;
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	while (connected < 2 && now() < end) {
		uint32_t event;
		ssize_t n = fi_eq_sread(eq, &event, buf, sizeof(buf), 100, 0);
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry ee = { 0 };
			fi_eq_readerr(eq, &ee, 0);
			EXPECT(0, "connect: EQ error %d", ee.err);
			break;
		}
		if (n < 0)
			continue;
		struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *) buf;
		if (event == FI_CONNREQ) {
			CHECK(fi_endpoint(domain, e->info, &srv, NULL));
			CHECK(fi_ep_bind(srv, &cq->fid, FI_TRANSMIT | FI_RECV));
			CHECK(fi_ep_bind(srv, &eq->fid, 0));
			CHECK(fi_enable(srv));
			CHECK(fi_accept(srv, NULL, 0));
			fi_freeinfo(e->info);
		} else if (event == FI_CONNECTED) {
			connected++;
		}
	}
	EXPECT(connected == 2, "connect: %d of 2 FI_CONNECTED events after fi_connect without fi_enable",
	       connected);
	if (srv)
		fi_close(&srv->fid);
	fi_close(&cli->fid);
	fi_close(&pep->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&eq->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(ci);
	fi_freeinfo(info);
}

static void cross_domain(void)
{
	struct fi_info *info = get_info(FI_EP_RDM, "127.0.0.1", FI_SOURCE);
	struct fid_fabric *fabric;
	struct fid_domain *d1, *d2;
	struct fid_cq *cq1, *cq2;
	struct fid_av *av1, *av2;
	struct fid_cntr *cn2;
	struct fid_ep *ep;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &d1, NULL));
	CHECK(fi_domain(fabric, info, &d2, NULL));
	CHECK(fi_cq_open(d1, &ca, &cq1, NULL));
	CHECK(fi_cq_open(d2, &ca, &cq2, NULL));
	CHECK(fi_av_open(d1, &aa, &av1, NULL));
	CHECK(fi_av_open(d2, &aa, &av2, NULL));
	CHECK(fi_cntr_open(d2, &na, &cn2, NULL));
	CHECK(fi_endpoint(d1, info, &ep, NULL));
	EXPECT_RC(fi_ep_bind(ep, &cq2->fid, FI_TRANSMIT | FI_RECV), -FI_EINVAL);
	EXPECT_RC(fi_ep_bind(ep, &av2->fid, 0), -FI_EINVAL);
	EXPECT_RC(fi_ep_bind(ep, &cn2->fid, FI_SEND), -FI_EINVAL);
	/* Its own domain's objects still bind, and it enables. */
	EXPECT_RC(fi_ep_bind(ep, &cq1->fid, FI_TRANSMIT | FI_RECV), 0);
	EXPECT_RC(fi_ep_bind(ep, &av1->fid, 0), 0);
	EXPECT_RC(fi_enable(ep), 0);
	fi_close(&ep->fid);
	fi_close(&cn2->fid);
	fi_close(&av2->fid);
	fi_close(&av1->fid);
	fi_close(&cq2->fid);
	fi_close(&cq1->fid);
	fi_close(&d2->fid);
	fi_close(&d1->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

static void eq_too_small(void)
{
	struct fi_info *info = get_info(FI_EP_RDM, "127.0.0.1", FI_SOURCE);
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_NONE };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq, NULL));
	struct fi_eq_entry in = { .fid = &fabric->fid, .context = (void *) 0x1234, .data = 77 }, out;
	EXPECT_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), (long) sizeof(in));
	uint32_t event = 0;
	EXPECT_RC(fi_eq_read(eq, &event, &out, sizeof(out) - 1, 0), -FI_ETOOSMALL);
	memset(&out, 0, sizeof(out));
	EXPECT_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), (long) sizeof(out));
	EXPECT(event == FI_NOTIFY && out.data == 77 && out.context == (void *) 0x1234,
	       "eqsmall: the entry read after -FI_ETOOSMALL is not the one written (event %u data %llu)", event,
	       (unsigned long long) out.data);
	EXPECT_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	fi_close(&eq->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

static void truncation_text(void)
{
	struct fi_info *info = get_info(FI_EP_RDM, "127.0.0.1", FI_SOURCE);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *a, *b;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq, NULL));
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	struct fid_ep **eps[] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		CHECK(fi_endpoint(domain, info, eps[i], NULL));
		CHECK(fi_ep_bind(*eps[i], &cq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_ep_bind(*eps[i], &av->fid, 0));
		CHECK(fi_enable(*eps[i]));
	}
	char addr[128];
	size_t alen = sizeof(addr);
	fi_addr_t to_b;
	CHECK(fi_getname(&b->fid, addr, &alen));
	EXPECT_RC(fi_av_insert(av, addr, 1, &to_b, 0, NULL), 1);
	char small[4], big[64];
	memset(big, 'x', sizeof(big));
	CHECK(fi_recv(b, small, sizeof(small), NULL, FI_ADDR_UNSPEC, NULL));
	struct fi_cq_msg_entry e;
	ssize_t rc;
	/* Upstream's tcp says -FI_EAGAIN until its connection is up. */
	for (double t = now() + 10; (rc = fi_send(a, big, sizeof(big), NULL, to_b, NULL)) == -FI_EAGAIN && now() < t;)
		(void) fi_cq_read(cq, &e, 1);
	if (rc)
		die("fi_send", rc);
	ssize_t n = -FI_EAGAIN;
	double end = now() + 10;
	int sends = 0;
	while (n != -FI_EAVAIL && now() < end) {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			sends++;
	}
	EXPECT(n == -FI_EAVAIL, "strerror: no error entry for the truncated receive (%zd)", n);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		char text[256] = "";
		EXPECT_RC(fi_cq_readerr(cq, &err, 0), 1);
		EXPECT(err.err == FI_ETRUNC, "strerror: err %d, want FI_ETRUNC", err.err);
		const char *s = fi_cq_strerror(cq, err.prov_errno, err.err_data, text, sizeof(text));
		printf("strerror: fi_cq_strerror of a truncation: \"%s\"\n", s ? s : "(null)");
		EXPECT(s && strcmp(s, "Success") && s[0], "strerror: fi_cq_strerror says \"%s\"", s ? s : "(null)");
	}
	for (end = now() + 5; sends < 1 && now() < end;)
		if (fi_cq_read(cq, &e, 1) == 1)
			sends++;
	fi_close(&a->fid);
	fi_close(&b->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

static void huge_sizes(void)
{
	struct fi_info *info = get_info(FI_EP_RDM, "127.0.0.1", FI_SOURCE);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq = NULL;
	struct fid_av *av = NULL;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .size = SIZE_MAX };
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = SIZE_MAX };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	EXPECT_RC(fi_cq_open(domain, &ca, &cq, NULL), -FI_EINVAL);
	if (cq && cq != (void *) 0)
		fi_close(&cq->fid);
	int rc = fi_av_open(domain, &aa, &av, NULL);
	EXPECT(rc == -FI_EINVAL || rc == -FI_ENOMEM, "huge: fi_av_open with count SIZE_MAX returned %d (%s)", rc,
	       fi_strerror(-rc));
	if (!rc)
		fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	if (argc > 2)
		prov = argv[2];
	struct {
		const char *name;
		void (*run)(void);
	} cases[] = {
		{ "connect", connect_implicit }, { "crossdom", cross_domain }, { "eqsmall", eq_too_small },
		{ "strerror", truncation_text }, { "huge", huge_sizes },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(which, "all") && strcmp(which, cases[i].name))
			continue;
		int before = failures;
		cases[i].run();
		printf("%s: %s\n", cases[i].name, failures == before ? "ok" : "FAILED");
	}
	return failures ? 1 : 0;
}
