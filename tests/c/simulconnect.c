/*
 * Two RDM endpoints that send to each other at the same moment (both
 * connect before either hears from the other) end up with ONE TCP
 * connection, and every message arrives in order. The connection count is
 * read from /proc/net/tcp (established sockets between the two ports).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "check.h"

#define ROUNDS 50

struct side {
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	struct sockaddr_in addr;
	int got[ROUNDS];
	int nrecv, nsent;
};

static struct fi_info *info;
static struct fid_fabric *fabric;

static void open_side(struct side *s)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(s->addr);
	int rc;
	if ((rc = fi_domain(fabric, info, &s->domain, NULL)) ||
	    (rc = fi_cq_open(s->domain, &ca, &s->cq, NULL)) ||
	    (rc = fi_av_open(s->domain, &aa, &s->av, NULL)) ||
	    (rc = fi_endpoint(s->domain, info, &s->ep, NULL)) ||
	    (rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (rc = fi_ep_bind(s->ep, &s->av->fid, 0)) || (rc = fi_enable(s->ep)) ||
	    (rc = fi_getname(&s->ep->fid, &s->addr, &len)))
		die("open", rc);
}

/* Drives one side: receives in order and counts completed sends. */
static void poll_side(struct side *s)
{
	struct fi_cq_entry e[8];
	ssize_t n = fi_cq_read(s->cq, e, 8);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(s->cq, &err, 0);
		die("completion error", -err.err);
	}
	for (ssize_t i = 0; i < n; i++) {
		int *slot = e[i].op_context;
		if (slot >= s->got && slot < s->got + ROUNDS)
			s->nrecv++;
		else
			s->nsent++;
	}
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct side a, b;
	static int payload[2][ROUNDS];
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if ((rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info)))
		die("fi_getinfo", rc);
	if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)))
		die("fi_fabric", rc);
	open_side(&a);
	open_side(&b);
	if (fi_av_insert(a.av, &b.addr, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, &a.addr, 1, &b.peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	for (int i = 0; i < ROUNDS; i++) {
		payload[0][i] = payload[1][i] = -1;
		if (fi_recv(a.ep, &payload[0][i], sizeof(int), NULL, FI_ADDR_UNSPEC, &a.got[i]) ||
		    fi_recv(b.ep, &payload[1][i], sizeof(int), NULL, FI_ADDR_UNSPEC, &b.got[i]))
			die("fi_recv", -FI_EIO);
	}
	/* Both sides send before either makes progress: simultaneous connects. */
	static int vals[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		vals[i] = i;
		if ((rc = (int) fi_send(a.ep, &vals[i], sizeof(int), NULL, a.peer, &vals[i])) ||
		    (rc = (int) fi_send(b.ep, &vals[i], sizeof(int), NULL, b.peer, &vals[i])))
			die("fi_send", rc);
	}
	time_t end = time(NULL) + 20;
	while ((a.nrecv < ROUNDS || b.nrecv < ROUNDS || a.nsent < ROUNDS || b.nsent < ROUNDS) && time(NULL) < end) {
		poll_side(&a);
		poll_side(&b);
	}
	if (a.nrecv < ROUNDS || b.nrecv < ROUNDS || a.nsent < ROUNDS || b.nsent < ROUNDS) {
		printf("FAIL: timed out (a %d/%d, b %d/%d)\n", a.nrecv, a.nsent, b.nrecv, b.nsent);
		return 1;
	}
	for (int i = 0; i < ROUNDS; i++)
		if (payload[0][i] != i || payload[1][i] != i) {
			printf("FAIL: message %d out of order (%d, %d)\n", i, payload[0][i], payload[1][i]);
			return 1;
		}
	int pa = ntohs(a.addr.sin_port), pb = ntohs(b.addr.sin_port);
	/* Count sockets whose remote port is either listener: each TCP
	 * connection has exactly one such socket (the connecting side's). */
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	int conns = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned la, lp, ra, rp, st;
		if (sscanf(line, " %*d: %x:%x %x:%x %x", &la, &lp, &ra, &rp, &st) == 5 && st == 1 &&
		    ((int) rp == pa || (int) rp == pb))
			conns++;
	}
	if (f)
		fclose(f);
	printf("simulconnect: %d messages each way in order, %d TCP connection(s)\n", ROUNDS, conns);
	if (conns != 1) {
		printf("FAIL: expected one connection between the two endpoints\n");
		return 1;
	}
	return 0;
}
