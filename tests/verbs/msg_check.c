/*
 * msg_check: the verbs provider's FI_EP_MSG features and faults, one
 * server and one client over rdma-cm (fabtests convention: the server with
 * -B PORT [-s ADDR], the client with -P PORT ADDR). Each step prints
 * "ok STEP" or "FAIL STEP: why" (exit status 1 at the first failure):
 *
 *  refused      (client) a connection to a port nobody listens on is an
 *               EQ error FI_ECONNREFUSED for that endpoint
 *  cm_data      connect and accept carry private data of the largest
 *               size FI_OPT_CM_DATA_SIZE gives; a larger one is refused
 *               with -FI_EINVAL
 *  names        fi_getname of one side is fi_getpeer of the other
 *  sendv        a three-piece fi_sendv lands whole in one receive
 *  senddata     fi_senddata's 32-bit data arrives with FI_REMOTE_CQ_DATA
 *  inject       fi_inject; one byte over inject_size is -FI_EMSGSIZE
 *  limits       (client) iov_limit + 1 pieces is -FI_EINVAL, max_msg_size
 *               + 1 bytes -FI_EMSGSIZE, a receive without its descriptor
 *               -FI_EINVAL, a send or receive with a descriptor of another
 *               domain -FI_EINVAL
 *  writedata    fi_writedata into the peer's region consumes a posted
 *               receive there (FI_RX_CQ_DATA) and reports FI_RMA |
 *               FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA with the data
 *  read         fi_read of the peer's region
 *  sread        fi_cq_sread on a CQ with a wait object sleeps until a
 *               message comes (the wait fd path), bounded by its timeout
 *  counter      a receive counter bound to the endpoint counted each
 *               receive (fi_cntr_wait, then fi_cntr_read)
 *  shutdown     the client shuts down: the server's EQ reports
 *               FI_SHUTDOWN and its pending receive fails with
 *               FI_ECANCELED, prov_errno set and a fi_cq_strerror text
 *               naming the peer
 *
 * With -T both sides ask for FI_ATOMIC and, after names, the client runs
 * the device's native atomics on the server's region instead of the
 * steps above:
 *
 *  atomic_query   fi_query_atomic and the *valid calls offer FI_SUM
 *                 (base, fetch) and FI_CSWAP (compare) on FI_INT64 and
 *                 FI_UINT64 with count 1, and -FI_EOPNOTSUPP for others
 *  atomic         fi_atomic FI_SUM, fi_fetch_atomic FI_SUM and
 *                 fi_compare_atomic FI_CSWAP (a match and a miss) give
 *                 FI_ATOMIC completions and the right old values
 *  atomic_refused an op or datatype the device lacks -FI_EOPNOTSUPP, two
 *                 elements -FI_EMSGSIZE, a misaligned address -FI_EINVAL
 *  atomic_badkey  a wrong key comes back as an error completion
 *                 FI_EACCES naming the peer and the verbs status (the
 *                 queue pair is then in error: the client shuts down)
 *  atomic_peer    (server) FI_SHUTDOWN and flushed receives, as shutdown
 *
 * With -A both sides ask for FI_PROGRESS_AUTO (the engine's progress
 * thread drives the endpoints).
 *
 * With -K the client instead kills itself (SIGKILL) right after the names
 * step, and the server checks the same as in shutdown ("killed"): a dead
 * peer ends in FI_SHUTDOWN and flushed receives, never a hang.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "check_util.h"
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>

static const char *prov = "verbs", *src_addr, *port = "47700", *dst;
static int killed; /* -K */
static int auto_progress; /* -A */
static int atomics; /* -T */
static struct fid_cntr *rxcntr;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_pep *pep;
static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_mr *mr;
static char *buf;
static void *desc;
#define REGION (1 << 20)
#define MSG 0      /* message buffer offset */
#define RMA 65536  /* offset of the region peers read and write */
#define RX 524288  /* receive buffers */

/* Waits (bounded) for one completion on cq; returns it, or dies. */
static struct fi_cq_data_entry wait_cq(const char *step, struct fid_cq *cq)
{
	struct fi_cq_data_entry e;
	for (long i = 0; i < 20000000; i++) {
		ssize_t n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return e;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			die(step, "error completion %s (prov_errno %d): %s", fi_strerror(err.err),
			    err.prov_errno, fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		}
		CHECK(step, n == -FI_EAGAIN, "fi_cq_read: %zd", n);
	}
	die(step, "no completion");
	return e;
}

/* Reads one EQ event (bounded); returns the event number. */
static uint32_t wait_eq(const char *step, struct fi_eq_cm_entry *entry, size_t *len)
{
	uint32_t ev;
	ssize_t n = fi_eq_sread(eq, &ev, entry, sizeof(*entry) + 64, 10000, 0);
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };
		fi_eq_readerr(eq, &err, 0);
		die(step, "EQ error %s", fi_strerror(err.err));
	}
	CHECK(step, n >= (ssize_t) sizeof(struct fi_eq_cm_entry), "fi_eq_sread: %zd", n);
	*len = (size_t) n - sizeof(struct fi_eq_cm_entry);
	return ev;
}

static void post_rx(const char *step, size_t off, size_t len)
{
	CALL(step, fi_recv(ep, buf + RX + off, len, desc, 0, buf + RX + off));
}

static void send_msg(const char *step, const void *data, size_t len)
{
	memcpy(buf + MSG, data, len);
	CALL(step, fi_send(ep, buf + MSG, len, desc, 0, buf + MSG));
	wait_cq(step, txcq);
}

static void open_active(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	CALL("setup", fi_domain(fabric, info, &domain, NULL));
	CALL("setup", fi_endpoint(domain, info, &ep, NULL));
	CALL("setup", fi_cq_open(domain, &ca, &txcq, NULL));
	CALL("setup", fi_cq_open(domain, &ca, &rxcq, NULL));
	CALL("setup", fi_ep_bind(ep, &eq->fid, 0));
	CALL("setup", fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CALL("setup", fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	struct fi_cntr_attr cta = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	CALL("setup", fi_cntr_open(domain, &cta, &rxcntr, NULL));
	CALL("setup", fi_ep_bind(ep, &rxcntr->fid, FI_RECV));
	CALL("setup", fi_enable(ep));
	CHECK("setup", !posix_memalign((void **) &buf, 4096, REGION), "posix_memalign");
	memset(buf, 0, REGION);
	CALL("setup", fi_mr_reg(domain, buf, REGION, FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	desc = fi_mr_desc(mr);
	/* Receives for the exchanges below, before connecting. */
	for (int i = 0; i < 8; i++)
		post_rx("setup", (size_t) i * 4096, 4096);
}

static void check_names(void)
{
	char mine[64], peer[64];
	size_t ml = sizeof(mine), pl = sizeof(peer);
	struct { char me[32], them[32]; } msg, got;
	CALL("names", fi_getname(&ep->fid, mine, &ml));
	CALL("names", fi_getpeer(ep, peer, &pl));
	memset(&msg, 0, sizeof(msg));
	memcpy(msg.me, mine, ml < 32 ? ml : 32);
	memcpy(msg.them, peer, pl < 32 ? pl : 32);
	send_msg("names", &msg, sizeof(msg));
	struct fi_cq_data_entry e = wait_cq("names", rxcq);
	memcpy(&got, e.buf, sizeof(got));
	CHECK("names", !memcmp(got.me, msg.them, 32) && !memcmp(got.them, msg.me, 32),
	      "fi_getname of one side is not fi_getpeer of the other");
	printf("ok names\n");
}

/* Client, first: a connection to a port nobody listens on ends in an EQ
 * error FI_ECONNREFUSED for that endpoint, within the EQ read's bound. */
static void refused(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .size = 8 };
	struct fid_domain *d;
	struct fid_ep *e;
	struct fid_cq *cq;
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_cm_entry entry;
	uint32_t ev;
	char nowhere[64];
	memcpy(nowhere, info->dest_addr, info->dest_addrlen < 64 ? info->dest_addrlen : 64);
	/* The server's port plus 1000: a port of the same family nobody uses. */
	uint16_t *port_be = (uint16_t *) (nowhere + 2);
	*port_be = htons((uint16_t) (ntohs(*port_be) + 1000));
	CALL("refused", fi_domain(fabric, info, &d, NULL));
	CALL("refused", fi_endpoint(d, info, &e, NULL));
	CALL("refused", fi_cq_open(d, &ca, &cq, NULL));
	CALL("refused", fi_ep_bind(e, &eq->fid, 0));
	CALL("refused", fi_ep_bind(e, &cq->fid, FI_TRANSMIT | FI_RECV));
	CALL("refused", fi_enable(e));
	CALL("refused", fi_connect(e, nowhere, NULL, 0));
	ssize_t n = fi_eq_sread(eq, &ev, &entry, sizeof(entry), 10000, 0);
	CHECK("refused", n == -FI_EAVAIL, "fi_eq_sread: %zd, want -FI_EAVAIL", n);
	CHECK("refused", fi_eq_readerr(eq, &err, 0) == sizeof(err), "fi_eq_readerr");
	CHECK("refused", err.fid == &e->fid && err.err == FI_ECONNREFUSED, "error %d (%s) on %p, want %d on %p",
	      err.err, fi_strerror(err.err), (void *) err.fid, FI_ECONNREFUSED, (void *) &e->fid);
	printf("ok refused: %s\n", fi_eq_strerror(eq, err.prov_errno, err.err_data, NULL, 0));
	fi_close(&e->fid);
	fi_close(&cq->fid);
	fi_close(&d->fid);
}

/* Server: the peer went away (shut down or died): FI_SHUTDOWN on the EQ,
 * then the receives still posted fail as flushed, naming the peer and the
 * verbs status. */
static void peer_gone(const char *step)
{
	char entry_buf[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_cm_entry *entry = (void *) entry_buf;
	struct fi_cq_data_entry e;
	size_t dlen;
	ssize_t n = 0;
	uint32_t ev = wait_eq(step, entry, &dlen);
	CHECK(step, ev == FI_SHUTDOWN, "event %u, want FI_SHUTDOWN", ev);
	for (long i = 0; i < 20000000; i++) {
		n = fi_cq_read(rxcq, &e, 1);
		if (n != -FI_EAGAIN)
			break;
	}
	CHECK(step, n == -FI_EAVAIL, "pending receive after FI_SHUTDOWN: %zd, want -FI_EAVAIL", n);
	struct fi_cq_err_entry err = { 0 };
	CHECK(step, fi_cq_readerr(rxcq, &err, 0) == 1, "fi_cq_readerr");
	const char *text = fi_cq_strerror(rxcq, err.prov_errno, err.err_data, NULL, 0);
	CHECK(step, err.err == FI_ECANCELED && err.prov_errno != 0 && text && strstr(text, "peer ") &&
		      strstr(text, "verbs status"),
	      "err %d prov_errno %d text %s", err.err, err.prov_errno, text ? text : "(null)");
	printf("ok %s: %s\n", step, text);
}

/* One atomic completion: its flags must be FI_ATOMIC and `rw`. */
static void atomic_done(const char *step, uint64_t rw)
{
	struct fi_cq_data_entry e = wait_cq(step, txcq);
	CHECK(step, (e.flags & (FI_ATOMIC | FI_READ | FI_WRITE | FI_RMA)) == (FI_ATOMIC | rw),
	      "completion flags %#llx", (unsigned long long) e.flags);
}

/* Client, -T: the steps atomic_query .. atomic_badkey on the server's
 * zeroed 64-bit word at `raddr` (module comment), then fi_shutdown. */
static void check_atomics(uint64_t raddr, uint64_t key)
{
	uint64_t *v = (uint64_t *) (buf + RMA), *res = v + 1, *cmp = v + 2;
	struct fi_atomic_attr attr;
	size_t cnt = 0;
	static const struct { enum fi_datatype dt; enum fi_op op; uint64_t flags; int ok; } q[] = {
		{ FI_UINT64, FI_SUM, 0, 1 }, { FI_INT64, FI_SUM, FI_FETCH_ATOMIC, 1 },
		{ FI_UINT64, FI_CSWAP, FI_COMPARE_ATOMIC, 1 }, { FI_INT64, FI_CSWAP, FI_COMPARE_ATOMIC, 1 },
		{ FI_UINT32, FI_SUM, FI_FETCH_ATOMIC, 0 }, { FI_DOUBLE, FI_SUM, 0, 0 },
		{ FI_UINT64, FI_MIN, 0, 0 }, { FI_UINT64, FI_ATOMIC_WRITE, 0, 0 },
		{ FI_UINT64, FI_ATOMIC_READ, FI_FETCH_ATOMIC, 0 }, { FI_UINT64, FI_CSWAP_NE, FI_COMPARE_ATOMIC, 0 },
	};
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		int rc = fi_query_atomic(domain, q[i].dt, q[i].op, &attr, q[i].flags);
		int vrc = q[i].flags == FI_FETCH_ATOMIC ? fi_fetch_atomicvalid(ep, q[i].dt, q[i].op, &cnt) :
			  q[i].flags ? fi_compare_atomicvalid(ep, q[i].dt, q[i].op, &cnt) :
				       fi_atomicvalid(ep, q[i].dt, q[i].op, &cnt);
		if (q[i].ok)
			CHECK("atomic_query", !rc && !vrc && attr.count == 1 && attr.size == 8 && cnt == 1,
			      "case %zu: query %d (count %zu size %zu), valid %d (count %zu)", i, rc, attr.count,
			      attr.size, vrc, cnt);
		else
			CHECK("atomic_query", rc == -FI_EOPNOTSUPP && vrc == -FI_EOPNOTSUPP,
			      "case %zu: query %d, valid %d, want -FI_EOPNOTSUPP", i, rc, vrc);
	}
	printf("ok atomic_query\n");
	*v = 5;
	CALL("atomic", fi_atomic(ep, v, 1, desc, 0, raddr, key, FI_UINT64, FI_SUM, NULL));
	atomic_done("atomic", FI_WRITE);
	*v = 7;
	CALL("atomic", fi_fetch_atomic(ep, v, 1, desc, res, desc, 0, raddr, key, FI_UINT64, FI_SUM, NULL));
	atomic_done("atomic", FI_READ);
	CHECK("atomic", *res == 5, "fetch-add fetched %llu, want 5", (unsigned long long) *res);
	*v = (uint64_t) -3;
	*cmp = 12;
	CALL("atomic", fi_compare_atomic(ep, v, 1, desc, cmp, desc, res, desc, 0, raddr, key, FI_INT64, FI_CSWAP,
					 NULL));
	atomic_done("atomic", FI_READ);
	CHECK("atomic", *res == 12, "cswap fetched %llu, want 12", (unsigned long long) *res);
	*v = 1;
	*cmp = 12;
	CALL("atomic", fi_compare_atomic(ep, v, 1, desc, cmp, desc, res, desc, 0, raddr, key, FI_INT64, FI_CSWAP,
					 NULL));
	atomic_done("atomic", FI_READ);
	CHECK("atomic", *res == (uint64_t) -3, "a missed cswap fetched %lld, want -3", (long long) *res);
	*v = 3;
	CALL("atomic", fi_fetch_atomic(ep, v, 1, desc, res, desc, 0, raddr, key, FI_INT64, FI_SUM, NULL));
	atomic_done("atomic", FI_READ);
	CHECK("atomic", *res == (uint64_t) -3, "the missed cswap changed the target to %lld", (long long) *res);
	CALL("atomic", fi_fetch_atomic(ep, v, 1, desc, res, desc, 0, raddr, key, FI_INT64, FI_SUM, NULL));
	atomic_done("atomic", FI_READ);
	CHECK("atomic", *res == 0, "-3 + 3 is %lld at the target", (long long) *res);
	printf("ok atomic\n");
	CHECK("atomic_refused", fi_atomic(ep, v, 1, desc, 0, raddr, key, FI_UINT64, FI_MIN, NULL) == -FI_EOPNOTSUPP,
	      "FI_MIN not -FI_EOPNOTSUPP");
	CHECK("atomic_refused",
	      fi_fetch_atomic(ep, v, 1, desc, res, desc, 0, raddr, key, FI_UINT32, FI_SUM, NULL) == -FI_EOPNOTSUPP,
	      "FI_UINT32 not -FI_EOPNOTSUPP");
	CHECK("atomic_refused", fi_atomic(ep, v, 2, desc, 0, raddr, key, FI_UINT64, FI_SUM, NULL) == -FI_EMSGSIZE,
	      "two elements not -FI_EMSGSIZE");
	CHECK("atomic_refused", fi_atomic(ep, v, 1, desc, 0, raddr + 4, key, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL,
	      "a misaligned address not -FI_EINVAL");
	CHECK("atomic_refused",
	      fi_fetch_atomic(ep, v, 1, desc, res, NULL, 0, raddr, key, FI_UINT64, FI_SUM, NULL) == -FI_EINVAL,
	      "a result buffer without its descriptor not -FI_EINVAL (FI_MR_LOCAL)");
	printf("ok atomic_refused\n");
	CALL("atomic_badkey", fi_fetch_atomic(ep, v, 1, desc, res, desc, 0, raddr, key ^ 0x5a5a00, FI_UINT64, FI_SUM,
					      NULL));
	struct fi_cq_data_entry e;
	ssize_t n = -FI_EAGAIN;
	for (long i = 0; i < 20000000 && n == -FI_EAGAIN; i++)
		n = fi_cq_read(txcq, &e, 1);
	CHECK("atomic_badkey", n == -FI_EAVAIL, "fi_cq_read: %zd, want -FI_EAVAIL", n);
	struct fi_cq_err_entry err = { 0 };
	CHECK("atomic_badkey", fi_cq_readerr(txcq, &err, 0) == 1, "fi_cq_readerr");
	const char *text = fi_cq_strerror(txcq, err.prov_errno, err.err_data, NULL, 0);
	CHECK("atomic_badkey", err.err == FI_EACCES && err.prov_errno != 0 && (err.flags & FI_ATOMIC) && text &&
		      strstr(text, "peer ") && strstr(text, "verbs status"),
	      "err %d prov_errno %d flags %#llx text %s", err.err, err.prov_errno, (unsigned long long) err.flags,
	      text ? text : "(null)");
	printf("ok atomic_badkey: %s\n", text);
	CALL("atomic_badkey", fi_shutdown(ep, 0));
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:B:P:s:KAT")) != -1) {
		switch (c) {
		case 'K': killed = 1; break;
		case 'A': auto_progress = 1; break;
		case 'T': atomics = 1; break;
		case 'p': prov = optarg; break;
		case 'B': case 'P': port = optarg; break;
		case 's': src_addr = optarg; break;
		default: return 2;
		}
	}
	if (optind < argc)
		dst = argv[optind];
	setvbuf(stdout, NULL, _IONBF, 0);

	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA | (atomics ? FI_ATOMIC : 0);
	hints->mode = FI_RX_CQ_DATA;
	hints->rx_attr->mode = FI_RX_CQ_DATA;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (auto_progress)
		hints->domain_attr->data_progress = hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	if (dst)
		CALL("getinfo", fi_getinfo(FI_VERSION(1, 17), dst, port, 0, hints, &info));
	else
		CALL("getinfo", fi_getinfo(FI_VERSION(1, 17), src_addr, port, FI_SOURCE, hints, &info));
	CALL("getinfo", fi_fabric(info->fabric_attr, &fabric, NULL));
	struct fi_eq_attr ea = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	CALL("setup", fi_eq_open(fabric, &ea, &eq, NULL));

	size_t cm_size = 0, optlen = sizeof(cm_size);
	char cm[256], entry_buf[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_cm_entry *entry = (void *) entry_buf;
	size_t dlen;
	if (!dst) {
		CALL("setup", fi_passive_ep(fabric, info, &pep, NULL));
		CALL("setup", fi_pep_bind(pep, &eq->fid, 0));
		CALL("setup", fi_listen(pep));
		CALL("cm_data", fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &optlen));
		CHECK("cm_data", wait_eq("cm_data", entry, &dlen) == FI_CONNREQ, "no FI_CONNREQ");
		CHECK("cm_data", dlen == cm_size, "request carried %zu bytes, want %zu", dlen, cm_size);
		for (size_t i = 0; i < dlen; i++)
			CHECK("cm_data", entry->data[i] == (uint8_t) (i + 1), "request data byte %zu", i);
		fi_freeinfo(info);
		info = entry->info;
		open_active();
		memset(cm, 0, sizeof(cm));
		CHECK("cm_data", fi_accept(ep, cm, cm_size + 1) == -FI_EINVAL, "oversized accept data");
		for (size_t i = 0; i < cm_size; i++)
			cm[i] = (char) (0xa0 + i);
		CALL("cm_data", fi_accept(ep, cm, cm_size));
		CHECK("cm_data", wait_eq("cm_data", entry, &dlen) == FI_CONNECTED, "no FI_CONNECTED");
	} else {
		refused();
		open_active();
		CALL("cm_data", fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &optlen));
		CHECK("cm_data", cm_size > 0 && cm_size < sizeof(cm), "cm data size %zu", cm_size);
		for (size_t i = 0; i < cm_size + 1; i++)
			cm[i] = (char) (i + 1);
		CHECK("cm_data", fi_connect(ep, info->dest_addr, cm, cm_size + 1) == -FI_EINVAL,
		      "oversized connect data");
		CALL("cm_data", fi_connect(ep, info->dest_addr, cm, cm_size));
		CHECK("cm_data", wait_eq("cm_data", entry, &dlen) == FI_CONNECTED, "no FI_CONNECTED");
		CHECK("cm_data", dlen == cm_size, "accept carried %zu bytes, want %zu", dlen, cm_size);
		for (size_t i = 0; i < dlen; i++)
			CHECK("cm_data", entry->data[i] == (uint8_t) (0xa0 + i), "accept data byte %zu", i);
	}
	printf("ok cm_data (%zu bytes)\n", cm_size);
	check_names();
	if (killed && dst)
		raise(SIGKILL);
	if (killed) {
		peer_gone("killed");
		return 0;
	}

	/* Both sides tell the peer where their RMA region is. */
	struct { uint64_t addr, key; } me = { (uintptr_t) (buf + RMA), fi_mr_key(mr) }, them;
	send_msg("exchange", &me, sizeof(me));
	memcpy(&them, wait_cq("exchange", rxcq).buf, sizeof(them));
	if (atomics) {
		if (dst)
			check_atomics(them.addr + 32768, them.key);
		else
			peer_gone("atomic_peer");
		return 0;
	}

	if (dst) {
		/* sendv: three pieces. */
		struct iovec iov[3] = { { buf + 100, 10 }, { buf + 300, 20 }, { buf + 700, 30 } };
		void *d3[3] = { desc, desc, desc };
		for (int i = 0; i < 60; i++)
			buf[i < 10 ? 100 + i : i < 30 ? 290 + i : 670 + i] = (char) i;
		CALL("sendv", fi_sendv(ep, iov, d3, 3, 0, NULL));
		wait_cq("sendv", txcq);
		printf("ok sendv\n");
		/* senddata */
		CALL("senddata", fi_senddata(ep, buf + MSG, 8, desc, 0xfeedbeef, 0, NULL));
		wait_cq("senddata", txcq);
		printf("ok senddata\n");
		/* inject, and one byte too many */
		memset(buf + MSG, 'i', info->tx_attr->inject_size + 1);
		CALL("inject", fi_inject(ep, buf + MSG, info->tx_attr->inject_size, 0));
		CHECK("inject", fi_inject(ep, buf + MSG, info->tx_attr->inject_size + 1, 0) == -FI_EMSGSIZE,
		      "an inject over inject_size is not -FI_EMSGSIZE");
		printf("ok inject\n");
		/* limits: more iovs than iov_limit, more bytes than max_msg_size,
		 * a receive without its descriptor (FI_MR_LOCAL) */
		{
			size_t lim = info->tx_attr->iov_limit;
			struct iovec many[64];
			void *dm[64];
			for (size_t i = 0; i <= lim && i < 64; i++) {
				many[i].iov_base = buf + MSG + i;
				many[i].iov_len = 1;
				dm[i] = desc;
			}
			CHECK("limits", lim < 64 && fi_sendv(ep, many, dm, lim + 1, 0, NULL) == -FI_EINVAL,
			      "iov_limit %zu + 1 pieces not -FI_EINVAL", lim);
			CHECK("limits", fi_send(ep, buf, info->ep_attr->max_msg_size + 1, desc, 0, NULL) ==
					-FI_EMSGSIZE, "max_msg_size + 1 bytes not -FI_EMSGSIZE");
			CHECK("limits", fi_recv(ep, buf + RX, 4096, NULL, 0, NULL) == -FI_EINVAL,
			      "a receive without its descriptor is not -FI_EINVAL");
			/* A descriptor of another domain (another protection domain). */
			struct fid_domain *dom2;
			struct fid_mr *mr2;
			static char other[4096];
			CALL("limits", fi_domain(fabric, info, &dom2, NULL));
			CALL("limits", fi_mr_reg(dom2, other, sizeof(other), FI_SEND | FI_RECV, 0, 0, 0, &mr2, NULL));
			CHECK("limits", fi_send(ep, other, 16, fi_mr_desc(mr2), 0, NULL) == -FI_EINVAL,
			      "a send with another domain's descriptor is not -FI_EINVAL");
			CHECK("limits", fi_recv(ep, other, 4096, fi_mr_desc(mr2), 0, NULL) == -FI_EINVAL,
			      "a receive with another domain's descriptor is not -FI_EINVAL");
			fi_close(&mr2->fid);
			fi_close(&dom2->fid);
			printf("ok limits\n");
		}
		/* writedata into the server's region */
		for (int i = 0; i < 4096; i++)
			buf[RMA + 8192 + i] = (char) (i * 7);
		CALL("writedata", fi_writedata(ep, buf + RMA + 8192, 4096, desc, 0x5a5a1234, 0,
					       them.addr + 4096, them.key, NULL));
		wait_cq("writedata", txcq);
		printf("ok writedata\n");
		/* read the server's region (it filled bytes 0..4095 with i*3) */
		wait_cq("read", rxcq); /* "filled" */
		CALL("read", fi_read(ep, buf + RMA + 16384, 4096, desc, 0, them.addr, them.key, NULL));
		struct fi_cq_data_entry e = wait_cq("read", txcq);
		CHECK("read", e.flags & FI_READ, "read completion flags %#llx", (unsigned long long) e.flags);
		for (int i = 0; i < 4096; i++)
			CHECK("read", buf[RMA + 16384 + i] == (char) (i * 3), "byte %d", i);
		printf("ok read\n");
		/* sread: the server sleeps in fi_cq_sread until this comes. */
		wait_cq("sread", rxcq); /* "sleeping" */
		usleep(300000);
		send_msg("sread", "wake", 5);
		/* shutdown */
		wait_cq("shutdown", rxcq); /* "ready" */
		/* The server's send of "ready" completes when our device's
		 * acknowledgement reaches it; a disconnect before that flushes
		 * it (a race of the test, seen on a fast client). */
		usleep(200000);
		CALL("shutdown", fi_shutdown(ep, 0));
		printf("ok shutdown (client)\n");
		return 0;
	}

	/* Server side of the steps. */
	struct fi_cq_data_entry e = wait_cq("sendv", rxcq);
	CHECK("sendv", e.len == 60, "got %zu bytes", e.len);
	for (int i = 0; i < 60; i++)
		CHECK("sendv", ((char *) e.buf)[i] == (char) i, "byte %d", i);
	printf("ok sendv\n");
	e = wait_cq("senddata", rxcq);
	CHECK("senddata", (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xfeedbeef,
	      "flags %#llx data %#llx", (unsigned long long) e.flags, (unsigned long long) e.data);
	printf("ok senddata\n");
	e = wait_cq("inject", rxcq);
	CHECK("inject", e.len == info->tx_attr->inject_size && ((char *) e.buf)[0] == 'i', "got %zu bytes",
	      e.len);
	printf("ok inject\n");
	e = wait_cq("writedata", rxcq);
	CHECK("writedata", e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA) && e.data == 0x5a5a1234 &&
		      e.len == 4096, "flags %#llx data %#llx len %zu", (unsigned long long) e.flags,
	      (unsigned long long) e.data, e.len);
	for (int i = 0; i < 4096; i++)
		CHECK("writedata", buf[RMA + 4096 + i] == (char) (i * 7), "byte %d", i);
	printf("ok writedata\n");
	for (int i = 0; i < 4096; i++)
		buf[RMA + i] = (char) (i * 3);
	/* Receives used so far: names, exchange, sendv, senddata, inject,
	 * writedata: six of eight; replenish. */
	for (int i = 0; i < 6; i++)
		post_rx("read", (size_t) (8 + i) * 4096, 4096);
	send_msg("read", "filled", 7);
	printf("ok read (server side)\n");
	/* sread on a CQ with a wait object. */
	send_msg("sread", "sleeping", 9);
	ssize_t n = fi_cq_sread(rxcq, &e, 1, NULL, 10000);
	CHECK("sread", n == 1 && !strcmp(e.buf, "wake"), "fi_cq_sread: %zd", n);
	printf("ok sread\n");
	/* The receive counter counted every receive so far: names, exchange,
	 * sendv, senddata, inject, writedata, wake. */
	CALL("counter", fi_cntr_wait(rxcntr, 7, 5000));
	CHECK("counter", fi_cntr_read(rxcntr) == 7 && fi_cntr_readerr(rxcntr) == 0, "counter %llu, errors %llu",
	      (unsigned long long) fi_cntr_read(rxcntr), (unsigned long long) fi_cntr_readerr(rxcntr));
	printf("ok counter\n");
	send_msg("shutdown", "ready", 6);
	peer_gone("shutdown");
	return 0;
}
