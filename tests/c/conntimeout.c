/*
 * RDM connection setup retries bounded by FI_SOCKETS_CONN_TIMEOUT
 * (tests/c/t-conntimeout.sh starts the processes and sets the bound):
 *
 *   conntimeout peer MYPORT
 *       an RDM endpoint bound to MYPORT; prints READY, then receives
 *       messages (printing GOT for each) until killed or 30 s pass.
 *   conntimeout send MYPORT PEERPORT ok
 *       sends one message to PEERPORT (whose endpoint may appear later)
 *       and requires a successful completion within 30 s.
 *   conntimeout send MYPORT PEERPORT err MIN_MS MAX_MS
 *       sends one message to PEERPORT, where nothing ever listens, and
 *       requires an error completion no sooner than MIN_MS (the provider
 *       retried) and no later than MAX_MS (the bound holds).
 *   conntimeout killed MYPORT PEERPORT MIN_MS MAX_MS GOFILE
 *       one message to the peer at PEERPORT succeeds (SENT); once GOFILE
 *       exists (the script killed the peer) a second one must end in an
 *       error completion within [MIN_MS, MAX_MS].
 *
 * Every wait is bounded; prints "ELAPSED <ms>" for each error it sees.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include "check.h"

static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;

#include "peers.h"

static void open_ep(const char *port)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->addr_format = FI_SOCKADDR_IN;
	CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", port, FI_SOURCE, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
	fi_freeinfo(hints);
}

/* Sends one message to `to`; returns its completion as wait_comp does and
 * the milliseconds it took in *ms. */
static int send_one(fi_addr_t to, double *ms)
{
	static char buf[64] = "hello";
	double t0 = now();
	ssize_t rc;
	while ((rc = fi_send(ep, buf, sizeof(buf), NULL, to, NULL)) == -FI_EAGAIN && now() < t0 + 30)
		(void) fi_cq_read(cq, NULL, 0);
	if (rc) {
		*ms = (now() - t0) * 1e3;
		printf("fi_send: %s\n", fi_strerror((int) -rc));
		return (int) -rc;
	}
	printf("SENDING\n");
	fflush(stdout);
	rc = wait_comp(30, NULL);
	*ms = (now() - t0) * 1e3;
	return (int) rc;
}

static void expect_error(fi_addr_t to, long min_ms, long max_ms)
{
	double ms;
	int rc = send_one(to, &ms);
	printf("ELAPSED %.0f (%s)\n", ms, rc > 0 ? fi_strerror(rc) : rc ? "no completion" : "success");
	EXPECT(rc > 0, "send to a peer that is not there: %s, want an error completion",
	       rc ? "no completion within 30 s" : "success");
	EXPECT(ms >= min_ms, "error after %.0f ms, want no sooner than %ld ms (retries within the bound)", ms, min_ms);
	EXPECT(ms <= max_ms, "error after %.0f ms, want no later than %ld ms", ms, max_ms);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "peer")) {
		static char buf[64];
		open_ep(argv[2]);
		printf("READY\n");
		double end = now() + 30;
		while (now() < end) {
			CHECK(fi_recv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL));
			if (wait_comp(end - now(), NULL) == 0)
				printf("GOT\n");
		}
		return 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "send")) {
		double ms;
		open_ep(argv[2]);
		fi_addr_t to = insert(argv[3]);
		if (!strcmp(argv[4], "ok")) {
			int rc = send_one(to, &ms);
			EXPECT(rc == 0, "send to a peer that appears late: %s",
			       rc > 0 ? fi_strerror(rc) : "no completion within 30 s");
			printf("sent after %.0f ms\n", ms);
		} else if (argc >= 7) {
			expect_error(to, atol(argv[5]), atol(argv[6]));
		}
		printf("%d checks, %d failed\n", checks, failures);
		return failures ? 1 : 0;
	}
	if (argc >= 7 && !strcmp(argv[1], "killed")) {
		double ms, end;
		open_ep(argv[2]);
		fi_addr_t to = insert(argv[3]);
		int rc = send_one(to, &ms);
		EXPECT(rc == 0, "first send to the live peer: %s", rc > 0 ? fi_strerror(rc) : "no completion");
		printf("SENT\n");
		for (end = now() + 30; access(argv[6], F_OK) != 0 && now() < end;)
			(void) fi_cq_read(cq, NULL, 0);
		EXPECT(access(argv[6], F_OK) == 0, "%s did not appear within 30 s", argv[6]);
		expect_error(to, atol(argv[4]), atol(argv[5]));
		printf("%d checks, %d failed\n", checks, failures);
		return failures ? 1 : 0;
	}
	fprintf(stderr, "usage: see the comment at the top of conntimeout.c\n");
	return 2;
}
