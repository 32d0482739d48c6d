/*
 * Authorization keys on RDM endpoints (fi_domain_attr.auth_key): two
 * endpoints holding the same key exchange data-checked messages; an
 * endpoint with another key and one with no key cannot deliver to the
 * keyed endpoint (their sends end in error completions within a bounded
 * time and the keyed endpoint receives nothing), nor can the keyed
 * endpoint deliver to them. MSG endpoints with a key (not checked there)
 * are refused with -FI_ENOSYS, or accepted and then must still refuse a
 * connect with the wrong key.
 *
 * Sides: A and B hold KEY, C holds OTHER, D none. One process, manual
 * progress, every side polled in one loop.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
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

#define N 16
#define LEN 4096
#define SIDES 4

struct side {
	const char *name;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	char addr[64];
	fi_addr_t peer[SIDES];
	int recvd, sent, errors, last_err;
	char rbuf[N][LEN];
	char sbuf[N][LEN];
	int rctx[N], sctx[N];
};

static struct side s[SIDES];
static struct fid_fabric *fabric;
static const char *prov;

static struct fi_info *getinfo_with(const char *key)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (key) {
		hints->domain_attr->auth_key = (uint8_t *) strdup(key);
		hints->domain_attr->auth_key_size = strlen(key);
	}
	int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (rc) {
		printf("fi_getinfo(%s key) failed: %d (%s)\n", key ? "with" : "without", rc,
		       fi_strerror(-rc));
		die("fi_getinfo", rc);
	}
	if (key)
		EXPECT(info->domain_attr->auth_key_size == strlen(key) && info->domain_attr->auth_key &&
			       !memcmp(info->domain_attr->auth_key, key, strlen(key)),
		       "fi_getinfo does not return the key of the hints");
	else
		EXPECT(info->domain_attr->auth_key_size == 0, "a key nobody asked for is advertised");
	return info;
}

static void open_side(struct side *x, struct fi_info *info, const char *name)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(x->addr);
	x->name = name;
	if (!fabric)
		CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &x->domain, NULL));
	CHECK(fi_cq_open(x->domain, &ca, &x->cq, NULL));
	CHECK(fi_av_open(x->domain, &aa, &x->av, NULL));
	CHECK(fi_endpoint(x->domain, info, &x->ep, NULL));
	CHECK(fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(x->ep, &x->av->fid, 0));
	CHECK(fi_enable(x->ep));
	CHECK(fi_getname(&x->ep->fid, x->addr, &len));
}

static void poll_side(struct side *x)
{
	struct fi_cq_entry e[8];
	ssize_t n = fi_cq_read(x->cq, e, 8);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		if (fi_cq_readerr(x->cq, &err, 0) == 1) {
			int *c = err.op_context;
			if (c >= x->rctx && c < x->rctx + N)
				printf("FAIL %s: receive error %d\n", x->name, err.err);
			x->errors++;
			x->last_err = err.err;
		}
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		int *c = e[i].op_context;
		if (c >= x->rctx && c < x->rctx + N)
			x->recvd++;
		else
			x->sent++;
	}
}

static void poll_all(void)
{
	for (int i = 0; i < SIDES; i++)
		poll_side(&s[i]);
}

/* Polls until cond() holds or `secs` pass; false on timeout. */
static int wait_for(int (*cond)(void), int secs)
{
	time_t end = time(NULL) + secs;
	while (!cond() && time(NULL) < end)
		poll_all();
	return cond();
}

static void send_n(struct side *from, int to, int n, char fill)
{
	for (int i = 0; i < n; i++) {
		memset(from->sbuf[i], fill + i, LEN);
		ssize_t rc;
		while ((rc = fi_send(from->ep, from->sbuf[i], LEN, NULL, from->peer[to],
				     &from->sctx[i])) == -FI_EAGAIN)
			poll_all();
		if (rc)
			die("fi_send", rc);
	}
}

static void post_recvs(struct side *x)
{
	for (int i = 0; i < N; i++) {
		memset(x->rbuf[i], 0, LEN);
		CHECK(fi_recv(x->ep, x->rbuf[i], LEN, NULL, FI_ADDR_UNSPEC, &x->rctx[i]));
	}
}

static int ab_done(void) { return s[0].recvd == N && s[1].sent == N; }
static int intruders_done(void) { return s[2].errors + s[2].sent >= N && s[3].errors + s[3].sent >= N; }
static int a_out_target;
static int a_out_done(void) { return s[0].errors + s[0].sent >= a_out_target; }

static struct fi_info *msg_info(const char *key, int source)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	if (key) {
		hints->domain_attr->auth_key = (uint8_t *) strdup(key);
		hints->domain_attr->auth_key_size = strlen(key);
	}
	int rc = fi_getinfo(FI_VERSION(1, 17), source ? "127.0.0.1" : NULL, source ? "0" : NULL,
			    source ? FI_SOURCE : 0, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		die("fi_getinfo (MSG)", rc);
	return info;
}

/* One MSG connect to a passive endpoint holding `srv_key` from one holding
 * `cli_key`: both sides connected when `ok`, else an FI_ECONNREFUSED EQ
 * error for the client and no connection request at the server. */
static void msg_connect(const char *srv_key, const char *cli_key, int ok)
{
	struct fi_info *si = msg_info(srv_key, 1), *ci = msg_info(cli_key, 0);
	struct fid_domain *sd, *cd;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *srv = NULL, *cli;
	struct fid_cq *scq, *ccq;
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	const char *what = !cli_key ? "no key" : strcmp(cli_key, srv_key) ? "other key" : "same key";
	CHECK(fi_eq_open(fabric, &ea, &eq, NULL));
	CHECK(fi_domain(fabric, si, &sd, NULL));
	CHECK(fi_domain(fabric, ci, &cd, NULL));
	CHECK(fi_cq_open(sd, &ca, &scq, NULL));
	CHECK(fi_cq_open(cd, &ca, &ccq, NULL));
	CHECK(fi_passive_ep(fabric, si, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	char addr[128];
	size_t alen = sizeof(addr);
	CHECK(fi_getname(&pep->fid, addr, &alen));
	CHECK(fi_endpoint(cd, ci, &cli, NULL));
	CHECK(fi_ep_bind(cli, &eq->fid, 0));
	CHECK(fi_ep_bind(cli, &ccq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(cli));
	CHECK(fi_connect(cli, addr, NULL, 0));

	int connected = 0, reqs = 0, err = 0;
	time_t end = time(NULL) + 15;
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	while (connected < 2 && !err && time(NULL) < end) {
		uint32_t event;
		ssize_t n = fi_eq_sread(eq, &event, buf, sizeof(buf), 100, 0);
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry ee = { 0 };
			fi_eq_readerr(eq, &ee, 0);
			err = ee.err;
			break;
		}
		if (n < 0)
			continue;
		struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *) buf;
		if (event == FI_CONNREQ) {
			reqs++;
			CHECK(fi_endpoint(sd, e->info, &srv, NULL));
			CHECK(fi_ep_bind(srv, &eq->fid, 0));
			CHECK(fi_ep_bind(srv, &scq->fid, FI_TRANSMIT | FI_RECV));
			CHECK(fi_enable(srv));
			CHECK(fi_accept(srv, NULL, 0));
			fi_freeinfo(e->info);
		} else if (event == FI_CONNECTED) {
			connected++;
		}
	}
	printf("MSG %s: %d connection request(s), %d connected, EQ error %d (%s)\n", what, reqs,
	       connected, err, fi_strerror(err));
	if (ok)
		EXPECT(connected == 2 && err == 0, "MSG %s: connect failed", what);
	else
		EXPECT(reqs == 0 && connected == 0 && err == FI_ECONNREFUSED,
		       "MSG %s: not refused (%d requests, %d connected, error %d)", what, reqs,
		       connected, err);
	if (srv)
		fi_close(&srv->fid);
	fi_close(&cli->fid);
	fi_close(&pep->fid);
	fi_close(&ccq->fid);
	fi_close(&scq->fid);
	fi_close(&cd->fid);
	fi_close(&sd->fid);
	fi_close(&eq->fid);
	fi_freeinfo(si);
	fi_freeinfo(ci);
}

int main(int argc, char **argv)
{
	prov = argc > 1 ? argv[1] : "sockets";
	const char *key = "oxifabric test key 0123456789", *other = "another key";
	struct fi_info *ki = getinfo_with(key), *oi = getinfo_with(other), *ni = getinfo_with(NULL);
	open_side(&s[0], ki, "A");
	open_side(&s[1], ki, "B");
	open_side(&s[2], oi, "C");
	open_side(&s[3], ni, "D");
	for (int i = 0; i < SIDES; i++)
		for (int j = 0; j < SIDES; j++)
			if (fi_av_insert(s[i].av, s[j].addr, 1, &s[i].peer[j], 0, NULL) != 1)
				die("fi_av_insert", -FI_EINVAL);

	/* Same key: B's messages reach A intact. */
	post_recvs(&s[0]);
	send_n(&s[1], 0, N, 'a');
	if (!wait_for(ab_done, 20))
		die("same-key messages timed out", -FI_ETIMEDOUT);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < LEN; k++)
			if (s[0].rbuf[i][k] != (char) ('a' + i))
				die("same-key message corrupted", -FI_EIO);
	printf("same key: %d messages of %d bytes delivered intact\n", N, LEN);

	/* Other key, no key: nothing reaches A, the senders get errors. */
	post_recvs(&s[0]);
	s[0].recvd = 0;
	send_n(&s[2], 0, N, 'c');
	send_n(&s[3], 0, N, 'd');
	if (!wait_for(intruders_done, 30))
		die("intruders' sends neither completed nor failed", -FI_ETIMEDOUT);
	EXPECT(s[2].sent == 0 && s[2].errors == N, "other key: %d sent, %d failed", s[2].sent,
	       s[2].errors);
	EXPECT(s[3].sent == 0 && s[3].errors == N, "no key: %d sent, %d failed", s[3].sent,
	       s[3].errors);
	printf("other key: %d error completions (last %d %s); no key: %d (last %d %s)\n",
	       s[2].errors, s[2].last_err, fi_strerror(s[2].last_err), s[3].errors, s[3].last_err,
	       fi_strerror(s[3].last_err));

	/* Nor can A deliver to them; its receives stay empty. */
	post_recvs(&s[2]);
	post_recvs(&s[3]);
	s[0].sent = s[0].errors = 0;
	for (int to = 2; to < SIDES; to++) {
		/* One batch at a time: the send buffers are reused. */
		a_out_target += N;
		send_n(&s[0], to, N, 'x');
		if (!wait_for(a_out_done, 30))
			die("keyed sends to intruders neither completed nor failed", -FI_ETIMEDOUT);
	}
	EXPECT(s[0].sent == 0, "keyed endpoint delivered %d messages to unkeyed peers", s[0].sent);
	EXPECT(s[0].recvd == 0 && s[2].recvd == 0 && s[3].recvd == 0,
	       "messages crossed the key boundary: A %d, C %d, D %d", s[0].recvd, s[2].recvd,
	       s[3].recvd);
	for (int i = 0; i < N; i++)
		EXPECT(s[0].rbuf[i][0] == 0, "A's buffer %d was written", i);

	/* A still talks to B after all that. */
	s[1].sent = 0;
	send_n(&s[1], 0, N, 'b');
	if (!wait_for(ab_done, 20))
		die("same-key messages after the intruders timed out", -FI_ETIMEDOUT);
	EXPECT(s[0].rbuf[N - 1][LEN - 1] == (char) ('b' + N - 1), "late same-key message corrupted");

	/* MSG: a passive endpoint with a key accepts only connects that
	 * prove it; the others get an FI_ECONNREFUSED EQ error. */
	msg_connect(key, key, 1);
	msg_connect(key, other, 0);
	msg_connect(key, NULL, 0);

	for (int i = 0; i < SIDES; i++) {
		fi_close(&s[i].ep->fid);
		fi_close(&s[i].av->fid);
		fi_close(&s[i].cq->fid);
		fi_close(&s[i].domain->fid);
	}
	fi_close(&fabric->fid);
	fi_freeinfo(ki);
	fi_freeinfo(oi);
	fi_freeinfo(ni);
	printf("authkey: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
