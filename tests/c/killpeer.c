/*
 * A peer that dies mid-transfer: the survivor gets an error completion for
 * its outstanding send within a bounded time and keeps talking to another
 * peer. Roles (tests/c/t-killpeer.sh starts one process per role):
 *
 *   killpeer victim   <ep> <myport> <survivor-port>
 *       opens an endpoint with manual progress and then never drives it,
 *       so the survivor's large send stalls in TCP; it is killed with -9.
 *   killpeer good     <ep> <myport> <survivor-port>
 *       receives "ping" from the survivor and answers "pong".
 *   killpeer survivor <ep> <myport> <victim-port> <good-port>
 *       sends 64 MiB to the victim, prints SENDING, waits (bounded) for the
 *       error completion, checks that fi_cq_strerror on it names the dead
 *       peer (127.0.0.1:<victim-port>) and a cause, then exchanges
 *       ping/pong with the good peer. On RDM a new send to the dead
 *       victim then fails within 2 s (its post or its completion). On MSG
 *       it finally connects to the dead victim's port again: the refusal
 *       is an EQ error entry whose
 *       fi_eq_strerror text names that address.
 *
 * <ep> is "rdm" or "msg". Every wait is bounded; a hang is a failure.
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
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "check.h"

#define BIG (64u << 20)

static int msg_ep;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_cq *cq;
static struct fid_av *av;

#include "peers.h"

static struct fi_info *get_info(const char *port, int manual, uint64_t flags, const char *node)
{
	struct fi_info *hints = fi_allocinfo(), *res = NULL;
	hints->ep_attr->type = msg_ep ? FI_EP_MSG : FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->addr_format = FI_SOCKADDR_IN;
	if (manual)
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	CHECK(fi_getinfo(FI_VERSION(1, 17), node, port, flags, hints, &res));
	fi_freeinfo(hints);
	return res;
}

static void open_common(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	if (!msg_ep) {
		struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
		CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	}
}

static struct fid_ep *rdm_ep(void)
{
	struct fid_ep *ep;
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));
	return ep;
}

/* MSG: connect to a passive endpoint at `port`, bounded. */
static struct fid_ep *msg_connect(const char *port)
{
	struct fi_info *ci = get_info(port, 0, 0, "127.0.0.1");
	struct fid_ep *ep;
	struct fi_eq_cm_entry entry;
	uint32_t event;
	CHECK(fi_endpoint(domain, ci, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &eq->fid, 0));
	CHECK(fi_enable(ep));
	CHECK(fi_connect(ep, ci->dest_addr, NULL, 0));
	if (fi_eq_sread(eq, &event, &entry, sizeof(entry), 10000, 0) < 0 || event != FI_CONNECTED)
		die("connect", -FI_ETIMEDOUT);
	fi_freeinfo(ci);
	return ep;
}

/* MSG: listen on `port` and accept one connection, bounded. */
static struct fid_ep *msg_accept(const char *port)
{
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fi_eq_cm_entry entry;
	uint32_t event;
	CHECK(fi_passive_ep(fabric, info, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq->fid, 0));
	CHECK(fi_listen(pep));
	printf("LISTENING\n");
	fflush(stdout);
	(void) port;
	if (fi_eq_sread(eq, &event, &entry, sizeof(entry), 20000, 0) < 0 || event != FI_CONNREQ)
		die("connreq", -FI_ETIMEDOUT);
	CHECK(fi_endpoint(domain, entry.info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &eq->fid, 0));
	CHECK(fi_enable(ep));
	CHECK(fi_accept(ep, NULL, 0));
	fi_freeinfo(entry.info);
	if (fi_eq_sread(eq, &event, &entry, sizeof(entry), 10000, 0) < 0 || event != FI_CONNECTED)
		die("accept", -FI_ETIMEDOUT);
	return ep;
}

int main(int argc, char **argv)
{
	/* The provider's error text lacked the peer or a cause. */
	int unexplained = 0;
	if (argc < 5) {
		fprintf(stderr, "usage: killpeer victim|good|survivor rdm|msg myport peerport [goodport]\n");
		return 2;
	}
	const char *role = argv[1];
	msg_ep = strcmp(argv[2], "msg") == 0;
	int victim = strcmp(role, "victim") == 0;
	info = get_info(argv[3], victim, FI_SOURCE, "127.0.0.1");
	open_common();
	char small[16];

	if (victim) {
		/* Become reachable, then stop driving progress. */
		if (msg_ep) {
			(void) msg_accept(argv[3]);
		} else {
			(void) rdm_ep();
			insert(argv[4]);
		}
		printf("READY\n");
		fflush(stdout);
		for (;;)
			pause();
	}

	if (strcmp(role, "good") == 0) {
		struct fid_ep *ep;
		fi_addr_t s = FI_ADDR_UNSPEC;
		if (msg_ep) {
			ep = msg_accept(argv[3]);
		} else {
			ep = rdm_ep();
			s = insert(argv[4]);
			printf("READY\n");
			fflush(stdout);
		}
		CHECK(fi_recv(ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, NULL));
		if (wait_comp(30, NULL) || strcmp(small, "ping") != 0)
			die("good: receive ping", -FI_EIO);
		CHECK(fi_send(ep, "pong", 5, NULL, s, NULL));
		if (wait_comp(30, NULL))
			die("good: send pong", -FI_EIO);
		printf("good: done\n");
		return 0;
	}

	/* survivor */
	struct fid_ep *to_victim, *to_good;
	fi_addr_t v = 0, g = 0;
	char *big = calloc(1, BIG);
	if (msg_ep) {
		to_victim = msg_connect(argv[4]);
		to_good = msg_connect(argv[5]);
	} else {
		to_victim = to_good = rdm_ep();
		v = insert(argv[4]);
		g = insert(argv[5]);
	}
	CHECK(fi_send(to_victim, big, BIG, NULL, v, (void *) 0x1234));
	/* Drive progress until the send is surely stuck in TCP buffers. */
	{
		struct fi_cq_data_entry e;
		for (int i = 0; i < 100; i++)
			(void) fi_cq_read(cq, &e, 0);
	}
	printf("SENDING\n");
	fflush(stdout);
	double t0 = now();
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof(err));
	int rc = wait_comp(30, &err);
	if (rc <= 0) {
		printf("FAIL: no error completion for the send to the killed peer (rc %d)\n", rc);
		return 1;
	}
	if (err.op_context != (void *) 0x1234) {
		printf("FAIL: error completion has context %p\n", err.op_context);
		return 1;
	}
	printf("survivor: error completion after %.2fs: %s\n", now() - t0, fi_strerror(rc));
	/* The provider's explanation names the peer and says why. */
	{
		char text[256], peer[64];
		const char *s = fi_cq_strerror(cq, err.prov_errno, err.err_data, text, sizeof(text));
		snprintf(peer, sizeof(peer), "127.0.0.1:%s", argv[4]);
		if (!s || !strstr(s, peer) || strlen(s) <= strlen(peer) + 2) {
			/* Noted, and the checks after it still run. */
			printf("FAIL: fi_cq_strerror(prov_errno %d) = '%s', want the peer %s and a cause\n",
			       err.prov_errno, s ? s : "(null)", peer);
			unexplained = 1;
		} else {
			printf("survivor: fi_cq_strerror: %s (prov_errno %d)\n", s, err.prov_errno);
		}
	}
	if (msg_ep) {
		uint32_t event;
		struct fi_eq_cm_entry entry;
		ssize_t n = fi_eq_sread(eq, &event, &entry, sizeof(entry), 10000, 0);
		if (n < 0 || event != FI_SHUTDOWN) {
			printf("FAIL: no FI_SHUTDOWN event (%zd, event %u)\n", n, event);
			return 1;
		}
		printf("survivor: FI_SHUTDOWN reported\n");
	}
	/* The other peer still works. */
	CHECK(fi_recv(to_good, small, sizeof(small), NULL, FI_ADDR_UNSPEC, NULL));
	CHECK(fi_send(to_good, "ping", 5, NULL, g, NULL));
	int got = 0;
	for (int i = 0; i < 2; i++)
		got += wait_comp(30, NULL) == 0;
	if (got != 2 || strcmp(small, "pong") != 0) {
		printf("FAIL: ping/pong with the good peer (%d completions, '%s')\n", got, small);
		return 1;
	}
	printf("survivor: still talking to the good peer\n");
	if (!msg_ep) {
		/* A peer whose established connection died is known dead: a new
		 * send to it fails within about a second, not after the
		 * connection-setup retry window meant for peers not listening
		 * yet (5 s by default). */
		double t1 = now();
		memset(&err, 0, sizeof(err));
		/* Refused at once by the post (upstream's sockets: -FI_ENOENT),
		 * or an error completion. */
		ssize_t posted = fi_send(to_victim, "late", 5, NULL, v, (void *) 0x5678);
		if (posted < 0) {
			rc = (int) -posted;
			err.op_context = (void *) 0x5678;
		} else {
			rc = wait_comp(30, &err);
		}
		double took = now() - t1;
		if (rc <= 0 || err.op_context != (void *) 0x5678) {
			printf("FAIL: a new send to the dead peer: rc %d, context %p\n", rc, err.op_context);
			return 1;
		}
		if (took > 2.0) {
			printf("FAIL: a new send to the dead peer failed after %.2fs, want < 2 s\n", took);
			return 1;
		}
		printf("survivor: a new send to the dead peer failed after %.2fs: %s\n", took, fi_strerror(rc));
	}
	if (msg_ep) {
		struct fi_info *ci = get_info(argv[4], 0, 0, "127.0.0.1");
		struct fid_ep *again;
		struct fi_eq_cm_entry entry;
		struct fi_eq_err_entry ee;
		uint32_t event;
		char text[256], peer[64];
		/* The victim's sockets close one by one as it dies: a connect
		 * that reaches its listener before that closes is reset instead
		 * of refused. Such an attempt is retried (a few times). */
		for (int attempt = 0;; attempt++) {
			CHECK(fi_endpoint(domain, ci, &again, NULL));
			CHECK(fi_ep_bind(again, &cq->fid, FI_TRANSMIT | FI_RECV));
			CHECK(fi_ep_bind(again, &eq->fid, 0));
			CHECK(fi_enable(again));
			CHECK(fi_connect(again, ci->dest_addr, NULL, 0));
			/* The good peer may be closing meanwhile: its FI_SHUTDOWN, or an
			 * error entry of its own connection, can come first. Only the
			 * entry of the new endpoint is judged. */
			ssize_t n;
			for (;;) {
				n = fi_eq_sread(eq, &event, &entry, sizeof(entry), 10000, 0);
				if (n >= 0 && event == FI_SHUTDOWN)
					continue;
				if (n != -FI_EAVAIL) {
					printf("FAIL: connect to the dead peer: fi_eq_sread = %zd, want -FI_EAVAIL\n", n);
					return 1;
				}
				memset(&ee, 0, sizeof(ee));
				if (fi_eq_readerr(eq, &ee, 0) != sizeof(ee)) {
					printf("FAIL: connect to the dead peer: fi_eq_readerr\n");
					return 1;
				}
				if (ee.fid == &again->fid)
					break;
				printf("survivor: passing over an EQ error of another endpoint (%d)\n", ee.err);
			}
			if (ee.err != FI_ECONNRESET || attempt >= 3)
				break;
			printf("survivor: connect reset while the victim's listener was closing; again\n");
			fi_close(&again->fid);
		}
		if (ee.err != FI_ECONNREFUSED) {
			printf("FAIL: connect to the dead peer: error %d, want FI_ECONNREFUSED\n", ee.err);
			return 1;
		}
		const char *s = fi_eq_strerror(eq, ee.prov_errno, ee.err_data, text, sizeof(text));
		snprintf(peer, sizeof(peer), "127.0.0.1:%s", argv[4]);
		if (!s || !strstr(s, peer)) {
			printf("FAIL: fi_eq_strerror = '%s', want the peer %s\n", s ? s : "(null)", peer);
			return 1;
		}
		printf("survivor: fi_eq_strerror: %s\n", s);
		fi_close(&again->fid);
		fi_freeinfo(ci);
	}
	free(big);
	return unexplained;
}
