/*
 * Call sequences that upstream's fabtests programs make and that our
 * look-alike programs did not (issue: "Upstream's own fabtests pass").
 * Each subtest makes the calls in upstream's order, in one process:
 *
 *   shutdown:  both sides of a connection call fi_shutdown, the client
 *              first (fi_cm_data): each endpoint gets exactly one
 *              FI_SHUTDOWN on its own EQ, the side that shut down first
 *              too; a second fi_shutdown returns 0 and reports nothing.
 *   pepaddr:   a passive endpoint named with fi_setname and given in
 *              hints->handle (fi_msg_sockets): fi_getinfo returns it in
 *              info->handle; fi_endpoint on that info takes its address,
 *              which fi_getname gives before and after fi_connect (the
 *              passive endpoint closed meanwhile) and which the accepting
 *              side sees as its peer.
 *   nullrecv:  fi_recv(ep, NULL, 256, ...) is accepted and an empty
 *              message completes it (fi_shared_ctx -e msg).
 *   nulltrunc: (ours only: upstream writes through the NULL pointer) a
 *              message with data into such a receive completes it with
 *              FI_ETRUNC and the endpoint keeps working.
 *   waitnone:  fi_cntr_wait on a counter and fi_cq_sread on a CQ opened
 *              with FI_WAIT_NONE wait with progress for what comes
 *              (fi_rdm_rma_trigger, fi_multi_mr: timeout -1), as
 *              upstream's sockets provider does;
 *   waittimeout: (ours only: upstream's counter returns at once) and
 *              they honour a finite timeout when nothing comes.
 *   rmaclose:  the target of an RMA write counts it (FI_RMA_EVENT) and
 *              closes its endpoint at once (fi_rdm_rma_event): the
 *              initiator gets the write's completion, not an error.
 *
 * Usage: upstreamcalls SUBTEST|all [PROVIDER]. Every wait is bounded.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include "check.h"

static const char *prov = "sockets";
/* Capabilities asked for besides FI_MSG, and the data progress asked for. */
static uint64_t extra_caps;
static enum fi_progress data_progress = FI_PROGRESS_UNSPEC;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static struct fi_info *get_info(enum fi_ep_type type, const char *node, const char *service,
				uint64_t flags, struct fid *handle)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = type;
	hints->caps = FI_MSG | extra_caps;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	hints->handle = handle;
	hints->domain_attr->data_progress = data_progress;
	int rc = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
	hints->handle = NULL;
	fi_freeinfo(hints);
	if (rc)
		die("fi_getinfo", rc);
	return info;
}

/* A loopback port nobody listens on now. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof(a)) || getsockname(s, (struct sockaddr *) &a, &len))
		die("free_port", -FI_EIO);
	close(s);
	return ntohs(a.sin_port);
}

static int port_of(const void *addr)
{
	return ntohs(((const struct sockaddr_in *) addr)->sin_port);
}

/* A connected MSG pair in one process: each endpoint with its own EQ. */
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq_srv, *eq_cli, *eq_pep;
static struct fid_cq *cq_srv, *cq_cli;
static struct fid_pep *pep;
static struct fid_ep *srv, *cli;

/* Reads one event of `eq` within `seconds`, driving the other EQs (so
 * both sides progress): the event, or -1 (none), or -2 (an error entry). */
static int next_event(struct fid_eq *eq, double seconds, struct fid **fid_out, struct fi_info **info_out)
{
	struct fid_eq *all[3] = { eq_pep, eq_srv, eq_cli };
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	double end = now() + seconds;
	do {
		for (int i = 0; i < 3; i++) {
			uint32_t event;
			if (!all[i] || all[i] == eq)
				continue;
			/* Peek: the other queues are only driven, never drained. */
			(void) fi_eq_read(all[i], &event, buf, sizeof(buf), FI_PEEK);
		}
		uint32_t event;
		ssize_t n = fi_eq_read(eq, &event, buf, sizeof(buf), 0);
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry ee = { 0 };
			(void) fi_eq_readerr(eq, &ee, 0);
			printf("EQ error entry: %d (%s)\n", ee.err, fi_strerror(ee.err));
			return -2;
		}
		if (n >= 0) {
			struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *) buf;
			if (fid_out)
				*fid_out = e->fid;
			if (info_out)
				*info_out = event == FI_CONNREQ ? e->info : NULL;
			else if (event == FI_CONNREQ)
				fi_freeinfo(e->info);
			return (int) event;
		}
		if (n != -FI_EAGAIN)
			die("fi_eq_read", n);
	} while (now() < end);
	return -1;
}

static void open_common(void)
{
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG };
	info = get_info(FI_EP_MSG, "127.0.0.1", "0", FI_SOURCE, NULL);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq_pep, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq_srv, NULL));
	CHECK(fi_eq_open(fabric, &ea, &eq_cli, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq_srv, NULL));
	CHECK(fi_cq_open(domain, &ca, &cq_cli, NULL));
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq_pep->fid, 0));
	CHECK(fi_listen(pep));
}

/* Connects an endpoint of `ci` (its own EQ; `cli` when already open) to
 * the listening passive endpoint and accepts it; 0 when both sides saw
 * FI_CONNECTED. */
static int connect_pair(struct fi_info *ci, const void *dest)
{
	struct fi_info *req = NULL;
	struct fid *f = NULL;
	if (!cli) {
		CHECK(fi_endpoint(domain, ci, &cli, NULL));
		CHECK(fi_ep_bind(cli, &cq_cli->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_ep_bind(cli, &eq_cli->fid, 0));
		CHECK(fi_enable(cli));
	}
	CHECK(fi_connect(cli, dest, NULL, 0));
	if (next_event(eq_pep, 10, NULL, &req) != FI_CONNREQ) {
		printf("FAIL: no FI_CONNREQ\n");
		return -1;
	}
	CHECK(fi_endpoint(domain, req, &srv, NULL));
	fi_freeinfo(req);
	CHECK(fi_ep_bind(srv, &cq_srv->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(srv, &eq_srv->fid, 0));
	CHECK(fi_enable(srv));
	CHECK(fi_accept(srv, NULL, 0));
	if (next_event(eq_srv, 10, &f, NULL) != FI_CONNECTED || f != &srv->fid) {
		printf("FAIL: the accepting side saw no FI_CONNECTED\n");
		return -1;
	}
	if (next_event(eq_cli, 10, &f, NULL) != FI_CONNECTED || f != &cli->fid) {
		printf("FAIL: the connecting side saw no FI_CONNECTED\n");
		return -1;
	}
	return 0;
}

static void close_common(void)
{
	if (srv)
		fi_close(&srv->fid);
	if (cli)
		fi_close(&cli->fid);
	if (pep)
		fi_close(&pep->fid);
	fi_close(&cq_srv->fid);
	fi_close(&cq_cli->fid);
	fi_close(&domain->fid);
	fi_close(&eq_pep->fid);
	fi_close(&eq_srv->fid);
	fi_close(&eq_cli->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	srv = cli = NULL;
	pep = NULL;
}

/* The listener's port as a service string. */
static void listener_service(char *service, size_t len)
{
	char addr[128];
	size_t alen = sizeof(addr);
	CHECK(fi_getname(&pep->fid, addr, &alen));
	snprintf(service, len, "%d", port_of(addr));
}

/* Opens the pair: the client from fi_getinfo for the listener's address,
 * as upstream's programs do. */
static int open_pair(void)
{
	char service[16];
	open_common();
	listener_service(service, sizeof(service));
	struct fi_info *ci = get_info(FI_EP_MSG, "127.0.0.1", service, 0, NULL);
	int rc = connect_pair(ci, ci->dest_addr);
	fi_freeinfo(ci);
	return rc;
}

static void shutdown_both(void)
{
	struct fid *f = NULL;
	if (open_pair()) {
		failures++;
		close_common();
		return;
	}
	EXPECT_RC(fi_shutdown(cli, 0), 0);
	int ev = next_event(eq_cli, 5, &f, NULL);
	EXPECT(ev == FI_SHUTDOWN && f == &cli->fid,
	       "shutdown: the side that shut down first got event %d (fid %p), want FI_SHUTDOWN (%d) for its endpoint %p",
	       ev, (void *) f, FI_SHUTDOWN, (void *) cli);
	ev = next_event(eq_srv, 5, &f, NULL);
	EXPECT(ev == FI_SHUTDOWN && f == &srv->fid,
	       "shutdown: the peer got event %d, want FI_SHUTDOWN (%d) for its endpoint", ev, FI_SHUTDOWN);
	EXPECT_RC(fi_shutdown(srv, 0), 0);
	EXPECT_RC(fi_shutdown(cli, 0), 0);
	ev = next_event(eq_srv, 0.3, NULL, NULL);
	EXPECT(ev == -1, "shutdown: a second FI_SHUTDOWN (or event %d) on the side whose peer shut down first", ev);
	ev = next_event(eq_cli, 0.3, NULL, NULL);
	EXPECT(ev == -1, "shutdown: event %d after a second fi_shutdown", ev);
	close_common();
}

static void pep_address(void)
{
	char want[128], got[128], peer[128];
	size_t len;
	open_common();
	/* The client's passive endpoint, named but never listening. */
	struct fid_pep *cpep;
	struct fi_info *pinfo = get_info(FI_EP_MSG, "127.0.0.1", "0", FI_SOURCE, NULL);
	CHECK(fi_passive_ep(fabric, pinfo, &cpep, NULL));
	int port = free_port();
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(fi_setname(&cpep->fid, &sa, sizeof(sa)));
	len = sizeof(want);
	CHECK(fi_getname(&cpep->fid, want, &len));
	EXPECT(port_of(want) == port, "pepaddr: fi_getname after fi_setname gave port %d, want %d",
	       port_of(want), port);

	/* Its handle in the hints; the listener's address as destination. */
	char service[16];
	listener_service(service, sizeof(service));
	struct fi_info *ci = get_info(FI_EP_MSG, "127.0.0.1", service, 0, &cpep->fid);
	EXPECT(ci->handle == &cpep->fid, "pepaddr: info->handle is %p, want the passive endpoint %p",
	       (void *) ci->handle, (void *) &cpep->fid);
	CHECK(fi_endpoint(domain, ci, &cli, NULL));
	/* Closed before the endpoint is enabled and connects, as
	 * fi_msg_sockets does. */
	fi_close(&cpep->fid);
	CHECK(fi_ep_bind(cli, &cq_cli->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(cli, &eq_cli->fid, 0));
	CHECK(fi_enable(cli));
	len = sizeof(got);
	CHECK(fi_getname(&cli->fid, got, &len));
	EXPECT(port_of(got) == port, "pepaddr: the endpoint's fi_getname gave port %d, want the passive endpoint's %d",
	       port_of(got), port);
	if (connect_pair(ci, ci->dest_addr)) {
		failures++;
	} else {
		len = sizeof(got);
		CHECK(fi_getname(&cli->fid, got, &len));
		EXPECT(port_of(got) == port, "pepaddr: after fi_connect fi_getname gave port %d, want %d",
		       port_of(got), port);
		len = sizeof(peer);
		CHECK(fi_getpeer(srv, peer, &len));
		EXPECT(port_of(peer) == port, "pepaddr: the accepting side's peer has port %d, want %d",
		       port_of(peer), port);
	}
	fi_freeinfo(ci);
	fi_freeinfo(pinfo);
	close_common();
}

/* One completion of `cq` within 5 s: 0, the error, or -1. */
static int one_comp(struct fid_cq *cq, struct fi_cq_msg_entry *out)
{
	double end = now() + 5;
	do {
		struct fi_cq_msg_entry other;
		ssize_t n = fi_cq_read(cq, out, 1);
		/* Drives the other side; takes nothing. */
		(void) fi_cq_read(cq == cq_srv ? cq_cli : cq_srv, &other, 0);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			(void) fi_cq_readerr(cq, &err, 0);
			out->op_context = err.op_context;
			out->len = err.len;
			return err.err;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read", n);
	} while (now() < end);
	return -1;
}

static void null_recv(int with_data)
{
	struct fi_cq_msg_entry e;
	char msg[8] = "payload";
	if (open_pair()) {
		failures++;
		close_common();
		return;
	}
	EXPECT_RC(fi_recv(srv, NULL, 256, NULL, 0, (void *) 0x51), 0);
	EXPECT_RC(fi_send(cli, msg, with_data ? sizeof(msg) : 0, NULL, 0, (void *) 0xc1), 0);
	EXPECT(one_comp(cq_cli, &e) == 0, "nullrecv: the send did not complete");
	int rc = one_comp(cq_srv, &e);
	if (!with_data) {
		EXPECT(rc == 0 && e.op_context == (void *) 0x51 && e.len == 0,
		       "nullrecv: the NULL receive completed with %d (context %p, len %zu), want 0, 0x51, 0",
		       rc, e.op_context, e.len);
	} else {
		EXPECT(rc == FI_ETRUNC && e.op_context == (void *) 0x51,
		       "nulltrunc: a message with data into the NULL receive gave %d (context %p), want FI_ETRUNC",
		       rc, e.op_context);
		/* The endpoint still works. */
		char buf[16] = { 0 };
		EXPECT_RC(fi_recv(srv, buf, sizeof(buf), NULL, 0, (void *) 0x52), 0);
		EXPECT_RC(fi_send(cli, msg, sizeof(msg), NULL, 0, (void *) 0xc2), 0);
		EXPECT(one_comp(cq_cli, &e) == 0, "nulltrunc: the second send did not complete");
		rc = one_comp(cq_srv, &e);
		EXPECT(rc == 0 && strcmp(buf, "payload") == 0, "nulltrunc: the next receive gave %d, '%s'", rc, buf);
	}
	close_common();
}

/* Two RDM endpoints of one domain, each the other's peer in one AV: `a`
 * with CQ `cq_a`, `b` with CQ `cq_b` (the same CQ when `shared_cq`) and
 * counter `cntr` bound with `cntr_flags`. */
struct rdm_pair {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_cq *cq_a, *cq_b;
	struct fid_cntr *cntr;
	struct fid_av *av;
	struct fid_ep *a, *b;
	fi_addr_t to_a, to_b;
};

static void open_rdm_pair(struct rdm_pair *p, uint64_t caps, enum fi_progress progress,
			  enum fi_wait_obj wait, uint64_t cntr_flags, int shared_cq)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = wait };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	char addr[128];
	size_t len = sizeof(addr);
	extra_caps = caps;
	data_progress = progress;
	p->info = get_info(FI_EP_RDM, "127.0.0.1", "0", FI_SOURCE, NULL);
	extra_caps = 0;
	data_progress = FI_PROGRESS_UNSPEC;
	CHECK(fi_fabric(p->info->fabric_attr, &p->fab, NULL));
	CHECK(fi_domain(p->fab, p->info, &p->dom, NULL));
	CHECK(fi_cq_open(p->dom, &ca, &p->cq_a, NULL));
	if (shared_cq)
		p->cq_b = p->cq_a;
	else
		CHECK(fi_cq_open(p->dom, &ca, &p->cq_b, NULL));
	CHECK(fi_cntr_open(p->dom, &na, &p->cntr, NULL));
	CHECK(fi_av_open(p->dom, &aa, &p->av, NULL));
	CHECK(fi_endpoint(p->dom, p->info, &p->a, NULL));
	CHECK(fi_endpoint(p->dom, p->info, &p->b, NULL));
	CHECK(fi_ep_bind(p->a, &p->cq_a->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(p->b, &p->cq_b->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(p->b, &p->cntr->fid, cntr_flags));
	CHECK(fi_ep_bind(p->a, &p->av->fid, 0));
	CHECK(fi_ep_bind(p->b, &p->av->fid, 0));
	CHECK(fi_enable(p->a));
	CHECK(fi_enable(p->b));
	CHECK(fi_getname(&p->b->fid, addr, &len));
	CHECK(fi_av_insert(p->av, addr, 1, &p->to_b, 0, NULL) != 1);
	len = sizeof(addr);
	CHECK(fi_getname(&p->a->fid, addr, &len));
	CHECK(fi_av_insert(p->av, addr, 1, &p->to_a, 0, NULL) != 1);
}

/* Closes what open_rdm_pair opened (an endpoint already closed is NULL). */
static void close_rdm_pair(struct rdm_pair *p)
{
	if (p->a)
		fi_close(&p->a->fid);
	if (p->b)
		fi_close(&p->b->fid);
	fi_close(&p->av->fid);
	fi_close(&p->cntr->fid);
	fi_close(&p->cq_a->fid);
	if (p->cq_b != p->cq_a)
		fi_close(&p->cq_b->fid);
	fi_close(&p->dom->fid);
	fi_close(&p->fab->fid);
	fi_freeinfo(p->info);
}

static void wait_none(int timeouts)
{
	struct rdm_pair p = { 0 };
	char buf[16];
	open_rdm_pair(&p, 0, FI_PROGRESS_UNSPEC, FI_WAIT_NONE, FI_RECV, 1);
	struct fid_cq *cq = p.cq_a;
	struct fid_cntr *rx_cntr = p.cntr;
	struct fid_ep *a = p.a, *b = p.b;
	fi_addr_t to_b = p.to_b;

	struct fi_cq_msg_entry e;
	if (timeouts) {
		/* Nothing comes: both wait out their timeouts. (Upstream's
		 * sockets provider returns +FI_ETIMEDOUT from the counter wait
		 * at once here: ours only.) */
		double t0 = now();
		EXPECT_RC(fi_cntr_wait(rx_cntr, 1, 200), -FI_ETIMEDOUT);
		EXPECT(now() - t0 >= 0.15, "waittimeout: fi_cntr_wait returned after %.3f s, before its timeout",
		       now() - t0);
		t0 = now();
		EXPECT_RC(fi_cq_sread(cq, &e, 1, NULL, 200), -FI_EAGAIN);
		EXPECT(now() - t0 >= 0.15, "waittimeout: fi_cq_sread returned after %.3f s, before its timeout",
		       now() - t0);
	}

	/* A message arrives while the receiver waits on its counter without
	 * a timeout, as fi_rdm_rma_trigger does: the wait drives progress and
	 * ends (alarm() bounds it). */
	CHECK(fi_recv(b, buf, sizeof(buf), NULL, 0, (void *) 0xb));
	CHECK(fi_send(a, "hello", 6, NULL, to_b, (void *) 0xa));
	alarm(20);
	EXPECT_RC(fi_cntr_wait(rx_cntr, 1, -1), 0);
	EXPECT(fi_cntr_read(rx_cntr) == 1 && strcmp(buf, "hello") == 0, "waitnone: counter %lu, buffer '%s'",
	       (unsigned long) fi_cntr_read(rx_cntr), buf);
	/* Both completions are there for sread. */
	int got = 0;
	for (int i = 0; i < 2; i++)
		got += fi_cq_sread(cq, &e, 1, NULL, -1) == 1;
	alarm(0);
	EXPECT(got == 2, "waitnone: fi_cq_sread gave %d of 2 completions", got);

	close_rdm_pair(&p);
}

/* Reads one completion of `cq` within `seconds` (0: one try), driving
 * nothing else: 0, the error, or -1. */
static int cq_one(struct fid_cq *cq, void **ctx, double seconds)
{
	double end = now() + seconds;
	do {
		struct fi_cq_msg_entry e;
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1) {
			*ctx = e.op_context;
			return 0;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			(void) fi_cq_readerr(cq, &err, 0);
			*ctx = err.op_context;
			return err.err;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read", n);
	} while (now() < end);
	return -1;
}

static void rma_close(int manual)
{
	struct rdm_pair p = { 0 };
	struct fid_mr *mr_t, *mr_s;
	static char target[64], src[64] = "Hello from Client!", small[8];
	void *ctx;
	open_rdm_pair(&p, FI_RMA | FI_RMA_EVENT, manual ? FI_PROGRESS_MANUAL : FI_PROGRESS_UNSPEC,
		      FI_WAIT_NONE, FI_REMOTE_WRITE, 0);
	struct fi_info *ri = p.info;
	struct fid_domain *dom = p.dom;
	struct fid_cq *cq_a = p.cq_a, *cq_b = p.cq_b;
	struct fid_cntr *rmt = p.cntr;
	struct fid_ep *a = p.a, *b = p.b;
	fi_addr_t to_b = p.to_b;
	CHECK(fi_mr_reg(dom, target, sizeof(target), FI_REMOTE_WRITE, 0, 1, 0, &mr_t, NULL));
	CHECK(fi_mr_reg(dom, src, sizeof(src), FI_WRITE | FI_SEND, 0, 2, 0, &mr_s, NULL));
	uint64_t key = fi_mr_key(mr_t);
	uint64_t raddr = ri->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t) target : 0;

	/* A greeting makes the connection, driving both sides. */
	CHECK(fi_recv(b, small, sizeof(small), NULL, 0, (void *) 0xb0));
	CHECK(fi_send(a, "hi", 3, fi_mr_desc(mr_s), to_b, (void *) 0xa0));
	int got = 0;
	double end = now() + 5;
	while (got < 2 && now() < end) {
		got += cq_one(cq_a, &ctx, 0) == 0;
		got += cq_one(cq_b, &ctx, 0) == 0;
	}
	EXPECT(got == 2, "rmaclose: the greeting gave %d of 2 completions", got);

	/* fi_rdm_rma_event: the target counts the write and closes; the
	 * initiator then reads its completion. */
	CHECK(fi_write(a, src, strlen(src) + 1, fi_mr_desc(mr_s), to_b, raddr, key, (void *) 0xa1));
	/* The target's last call before fi_close is the read that sees the
	 * count, as in upstream's program. */
	uint64_t seen;
	end = now() + 5;
	while ((seen = fi_cntr_read(rmt)) < 1 && now() < end) {
		/* The initiator's side of the wait for its completion; takes
		 * nothing from its CQ. */
		struct fi_cq_msg_entry none;
		(void) fi_cq_read(cq_a, &none, 0);
	}
	fi_close(&b->fid);
	EXPECT(seen == 1 && strcmp(target, src) == 0, "rmaclose: the write did not land (%lu, '%s')",
	       (unsigned long) seen, target);
	int rc = cq_one(cq_a, &ctx, 5);
	EXPECT(rc == 0 && ctx == (void *) 0xa1,
	       "rmaclose: the initiator of a write that landed got %d (%s) after the target closed, want its completion",
	       rc, fi_strerror(rc > 0 ? rc : FI_EOTHER));

	fi_close(&mr_t->fid);
	fi_close(&mr_s->fid);
	p.b = NULL; /* closed above */
	close_rdm_pair(&p);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	int all = strcmp(which, "all") == 0;
	if (argc > 2)
		prov = argv[2];
	if (all || !strcmp(which, "shutdown"))
		shutdown_both();
	if (all || !strcmp(which, "pepaddr"))
		pep_address();
	if (all || !strcmp(which, "nullrecv"))
		null_recv(0);
	if (all || !strcmp(which, "nulltrunc"))
		null_recv(1);
	if (all || !strcmp(which, "waitnone"))
		wait_none(0);
	if (all || !strcmp(which, "waittimeout"))
		wait_none(1);
	if (all || !strcmp(which, "rmaclose")) {
		rma_close(0);
		rma_close(1);
	}
	printf("upstreamcalls %s (%s): %d checks, %d failed\n", which, prov, checks, failures);
	return failures ? 1 : 0;
}
