/*
 * srx_check: a shared receive context (fi_srx_context) of the verbs
 * provider's MSG endpoints, server against two client connections
 * (fabtests convention: the server with -B PORT [-s ADDR], the client
 * with -P PORT ADDR; built on fabtests-compat's shared.h). The client is
 * two processes: endpoint A in the parent, endpoint B in a child forked
 * before anything is opened, which connects once A is up, sends one
 * fi_senddata and kills itself (SIGKILL). The server binds both accepted
 * endpoints, each with CQs of its own, to one context and posts every
 * receive (two pieces each, with descriptors: FI_MR_LOCAL) to the context
 * only. Steps, each printed as "ok STEP" or "FAIL STEP":
 *
 *  advertised        (server) FI_SHARED_CONTEXT receive contexts are
 *                    offered (max_ep_srx_ctx > 0, rx_ctx_cnt echoed);
 *                    shared transmit contexts are not (fi_getinfo
 *                    -FI_ENODATA, fi_stx_context -FI_ENOSYS); a context
 *                    larger than the device allows is -FI_EINVAL
 *  binding           an endpoint bound to the context refuses fi_recv of
 *                    its own (-FI_ENOSYS) and a bind after fi_enable
 *  srx_senddata      B's message completes on B's receive CQ (not A's)
 *                    with its immediate data, FI_REMOTE_CQ_DATA, one of
 *                    the context's contexts and the bytes across both
 *                    pieces of that receive; B's receive counter is 1
 *  srx_peer_death    B's death is FI_SHUTDOWN for B, with nothing of the
 *                    context's lost on B's CQ; B closes
 *  srx_routing       then A's three messages complete on A's receive CQ,
 *                    in order, each in the receive its context names
 *  srx_writedata     A's fi_writedata consumes one of the context's
 *                    receives: FI_RMA | FI_REMOTE_WRITE |
 *                    FI_REMOTE_CQ_DATA with the data on A's CQ
 *  srx_size_left     fi_rx_size_left of the context counts the five
 *                    receives used
 *  srx_refusals      a receive without descriptors (FI_MR_LOCAL) and one
 *                    of more pieces than iov_limit are -FI_EINVAL
 *  srx_close         closing the context while A is bound is -FI_EBUSY;
 *                    after A closes it closes (receives still posted are
 *                    discarded)
 *  (client) client_b_killed, client_a  the client's own side
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <signal.h>
#include <sys/wait.h>
#include <rdma/fi_rma.h>

#define NRX 16        /* receives posted to the context */
#define PIECE 64      /* two pieces per receive */
#define MSGLEN 100    /* spans both pieces */
#define WLEN 64       /* fi_writedata length */
#define SRX_SIZE 64
#define B_DATA 0xb1b1u
#define A_DATA 0xa2a2u

struct keymsg {
	uint64_t addr, key;
};

static char region[65536];
#define RXAREA 0        /* NRX * 2 * PIECE */
#define RMA 8192        /* the region A writes into */
#define TX 16384        /* what a side sends from */
#define OWN 20480       /* a client's own receives */
static struct fid_mr *mr;

/* fi_rx_size_left (deprecated in the header, so called as it expands). */
static ssize_t rx_left(struct fid_ep *ep)
{
	return ep->ops->rx_size_left(ep);
}
static void *desc;
static int step_failures;

/* Prints "ok STEP" when no check failed since the previous step. */
static void step(const char *name)
{
	printf("%s %s\n", ft_failures == step_failures ? "ok" : "FAIL", name);
	fflush(stdout);
	step_failures = ft_failures;
}

static struct fi_info *srx_hints(void)
{
	struct fi_info *h = ft_hints(FI_MSG);
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	return h;
}

static void reg_region(void)
{
	int rc = fi_mr_reg(ft_domain, region, sizeof(region), FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, 0, 0,
			   &mr, NULL);
	if (rc)
		ft_die("fi_mr_reg: %s", fi_strerror(-rc));
	desc = fi_mr_desc(mr);
}

static struct fi_cq_data_entry cq_one(struct fid_cq *cq, const char *what)
{
	struct fi_cq_data_entry e;
	ft_cq_ok(cq, &e, what);
	return e;
}

/* ---- client ---- */

static void client_send(struct fid_ep *ep, struct fid_cq *txcq, unsigned seq, int with_data)
{
	ft_fill(region + TX, MSGLEN, seq);
	if (with_data)
		FT_POST(fi_senddata(ep, region + TX, MSGLEN, desc, B_DATA, 0, region + TX), "fi_senddata");
	else
		FT_POST(fi_send(ep, region + TX, MSGLEN, desc, 0, region + TX), "fi_send");
	cq_one(txcq, "send");
}

/* Endpoint B (the forked child): connects once the parent says so, sends
 * one message with immediate data and dies. */
static void client_b(int go)
{
	struct fi_eq_cm_entry cm;
	char c;
	int rc;
	if (read(go, &c, 1) != 1)
		exit(3);
	ft_setup(srx_hints());
	ft_open_cqs(FI_CQ_FORMAT_DATA);
	reg_region();
	ft_open_ep(ft_info);
	if ((rc = fi_connect(ft_ep, ft_info->dest_addr, NULL, 0)))
		ft_die("fi_connect(B): %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	client_send(ft_ep, ft_txcq, 200, 1);
	raise(SIGKILL);
	exit(4);
}

static int client(void)
{
	struct fi_eq_cm_entry cm;
	struct fi_cq_data_entry e;
	struct keymsg k;
	int pipefd[2], status = 0, rc;
	pid_t child;
	if (pipe(pipefd))
		ft_die("pipe");
	if ((child = fork()) < 0)
		ft_die("fork");
	if (child == 0) {
		close(pipefd[1]);
		client_b(pipefd[0]);
	}
	close(pipefd[0]);
	ft_setup(srx_hints());
	ft_open_cqs(FI_CQ_FORMAT_DATA);
	reg_region();
	ft_open_ep(ft_info);
	/* The key message and the server's goodbye. */
	FT_POST(fi_recv(ft_ep, region + OWN, 64, desc, 0, region + OWN), "fi_recv(key)");
	FT_POST(fi_recv(ft_ep, region + OWN + 64, 64, desc, 0, region + OWN + 64), "fi_recv(bye)");
	if ((rc = fi_connect(ft_ep, ft_info->dest_addr, NULL, 0)))
		ft_die("fi_connect(A): %s", fi_strerror(-rc));
	ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
	if (write(pipefd[1], "g", 1) != 1)
		ft_die("write(pipe)");
	if (waitpid(child, &status, 0) != child)
		ft_die("waitpid");
	FT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "endpoint B's process ended with status %#x",
		 status);
	step("client_b_killed");
	for (unsigned s = 1; s <= 3; s++)
		client_send(ft_ep, ft_txcq, s, 0);
	e = cq_one(ft_rxcq, "receive of the server's key");
	FT_CHECK(e.len == sizeof(k), "key message of %zu bytes", e.len);
	memcpy(&k, region + OWN, sizeof(k));
	ft_fill(region + TX, WLEN, 50);
	FT_POST(fi_writedata(ft_ep, region + TX, WLEN, desc, A_DATA, 0, k.addr, k.key, region + TX), "fi_writedata");
	cq_one(ft_txcq, "fi_writedata");
	cq_one(ft_rxcq, "receive of the server's goodbye");
	step("client_a");
	fi_close(&mr->fid);
	return ft_finish("srx_check");
}

/* ---- server ---- */

static struct fid_ep *srx, *ep_a, *ep_b;
static struct fid_cq *tx_a, *rx_a, *tx_b, *rx_b;
static struct fid_cntr *cntr_b;
static int used[NRX];

static char *rx_piece(int i, int piece)
{
	return region + RXAREA + (size_t) i * 2 * PIECE + (size_t) piece * PIECE;
}

static void post_srx(int i)
{
	struct iovec iov[2] = { { rx_piece(i, 0), PIECE }, { rx_piece(i, 1), PIECE } };
	void *d[2] = { desc, desc };
	FT_POST(fi_recvv(srx, iov, d, 2, 0, rx_piece(i, 0)), "fi_recvv(shared context)");
}

/* The receive a completion names: checks its context is one of the
 * context's, not used before, and that its bytes (across both pieces)
 * are message `seq`; returns its index. */
static int check_rx(const struct fi_cq_data_entry *e, size_t len, unsigned seq, const char *what)
{
	char whole[2 * PIECE];
	int i = (int) (((char *) e->op_context - rx_piece(0, 0)) / (2 * PIECE));
	if (i < 0 || i >= NRX || (char *) e->op_context != rx_piece(i, 0)) {
		FT_CHECK(0, "%s: context %p is none of the shared receives", what, e->op_context);
		return -1;
	}
	FT_CHECK(!used[i], "%s: receive %d completed twice", what, i);
	used[i] = 1;
	FT_CHECK(e->len == len, "%s: %zu bytes, want %zu", what, e->len, len);
	memcpy(whole, rx_piece(i, 0), 2 * PIECE);
	if (len == MSGLEN)
		FT_CHECK(ft_verify(whole, len, seq) < 0, "%s: byte %ld of receive %d differs", what,
			 ft_verify(whole, len, seq), i);
	return i;
}

static struct fid_ep *accept_one(struct fi_eq_cm_entry *req, struct fid_cq **txcq, struct fid_cq **rxcq,
				  struct fid_cntr **cntr)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE, .size = 256 };
	struct fi_cntr_attr cta = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_ep *ep;
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, rxcq, NULL)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if ((rc = fi_endpoint(ft_domain, req->info, &ep, NULL)))
		ft_die("fi_endpoint: %s", fi_strerror(-rc));
	fi_freeinfo(req->info);
	/* upstream fabtests' order: EQ, shared context, CQs, counters */
	if ((rc = fi_ep_bind(ep, &ft_eq->fid, 0)) || (rc = fi_ep_bind(ep, &srx->fid, 0)) ||
	    (rc = fi_ep_bind(ep, &(*txcq)->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(ep, &(*rxcq)->fid, FI_RECV)))
		ft_die("fi_ep_bind: %s", fi_strerror(-rc));
	if (cntr) {
		/* upstream's verbs has no counters: noted, not fatal */
		rc = fi_cntr_open(ft_domain, &cta, cntr, NULL);
		if (rc == -FI_ENOSYS)
			printf("note: fi_cntr_open: %s\n", fi_strerror(-rc));
		else if (rc || (rc = fi_ep_bind(ep, &(*cntr)->fid, FI_RECV)))
			ft_die("receive counter: %s", fi_strerror(-rc));
	}
	if ((rc = fi_enable(ep)))
		ft_die("fi_enable: %s", fi_strerror(-rc));
	FT_RC(fi_recv(ep, region + OWN, 64, desc, 0, NULL), -FI_ENOSYS);
	FT_CHECK(fi_ep_bind(ep, &srx->fid, 0) < 0, "a second fi_ep_bind of the context after fi_enable succeeded");
	if ((rc = fi_accept(ep, NULL, 0)))
		ft_die("fi_accept: %s", fi_strerror(-rc));
	return ep;
}

/* Accepts A, then B (requests in the order they come; an FI_CONNECTED
 * may follow the next FI_CONNREQ). */
static void accept_both(void)
{
	int connected = 0;
	while (connected < 2) {
		struct fi_eq_cm_entry cm;
		struct fi_eq_err_entry err;
		uint32_t ev = 0;
		if (ft_eq_wait(&cm, sizeof(cm), &err, &ev) == -FI_EAVAIL)
			ft_die("EQ error while accepting: %s", fi_strerror(err.err));
		if (ev == FI_CONNREQ && !ep_a)
			ep_a = accept_one(&cm, &tx_a, &rx_a, NULL);
		else if (ev == FI_CONNREQ && !ep_b)
			ep_b = accept_one(&cm, &tx_b, &rx_b, &cntr_b);
		else if (ev == FI_CONNECTED)
			connected++;
		else
			ft_die("EQ event %u while accepting", ev);
	}
	step("binding");
}

static int server(void)
{
	struct fi_info *h = srx_hints(), *probe = NULL;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fi_eq_cm_entry cm;
	struct fi_eq_err_entry eq_err;
	struct fi_rx_attr ra;
	struct fid_stx *stx = NULL;
	struct fid_ep *big = NULL;
	struct keymsg k;
	uint32_t ev = 0;

	h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	FT_RC(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &probe), -FI_ENODATA);
	fi_freeinfo(probe);
	fi_freeinfo(h);
	ft_setup(srx_hints());
	FT_CHECK(ft_info->domain_attr->max_ep_srx_ctx > 0, "max_ep_srx_ctx is 0");
	FT_CHECK(ft_info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT, "rx_ctx_cnt %zu", ft_info->ep_attr->rx_ctx_cnt);
	FT_CHECK(ft_info->domain_attr->max_ep_stx_ctx == 0, "max_ep_stx_ctx %zu",
		 ft_info->domain_attr->max_ep_stx_ctx);
	FT_RC(fi_stx_context(ft_domain, ft_info->tx_attr, &stx, NULL), -FI_ENOSYS);
	ra = *ft_info->rx_attr;
	ra.size = (size_t) 1 << 30;
	FT_RC(fi_srx_context(ft_domain, &ra, &big, NULL), -FI_EINVAL);
	step("advertised");

	ra.size = SRX_SIZE;
	ra.iov_limit = 2;
	if (fi_srx_context(ft_domain, &ra, &srx, NULL))
		ft_die("fi_srx_context");
	reg_region();
	for (int i = 0; i < NRX; i++)
		post_srx(i);
	ft_listen();
	accept_both();

	/* B's one message, on B's CQ. */
	e = cq_one(rx_b, "B's message");
	FT_CHECK((e.flags & (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA)) == (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA),
		 "B's message: flags %#llx", (unsigned long long) e.flags);
	FT_CHECK(e.data == B_DATA, "B's message: data %#llx", (unsigned long long) e.data);
	check_rx(&e, MSGLEN, 200, "B's message");
	FT_CHECK(cntr_b && fi_cntr_read(cntr_b) == 1, "B's receive counter: %lld, want 1",
		 cntr_b ? (long long) fi_cntr_read(cntr_b) : -1LL);
	FT_RC(ft_cq_poll(rx_a, &e, &err, NULL), 0);
	step("srx_senddata");

	/* B's death. */
	if (ft_eq_wait(&cm, sizeof(cm), &eq_err, &ev) == -FI_EAVAIL)
		FT_CHECK(0, "EQ error %s instead of B's FI_SHUTDOWN", fi_strerror(eq_err.err));
	FT_CHECK(ev == FI_SHUTDOWN && cm.fid == &ep_b->fid, "event %u for %p, want FI_SHUTDOWN for B", ev,
		 (void *) cm.fid);
	/* B's queue pair had taken none of the context's receives. */
	FT_RC(ft_cq_poll(rx_b, &e, &err, NULL), 0);
	FT_RC(fi_close(&ep_b->fid), 0);
	ep_b = NULL;
	step("srx_peer_death");

	/* A: three messages, then a write with data. */
	k.addr = (uint64_t) (uintptr_t) (region + RMA);
	k.key = fi_mr_key(mr);
	memcpy(region + TX, &k, sizeof(k));
	FT_POST(fi_send(ep_a, region + TX, sizeof(k), desc, 0, NULL), "fi_send(key)");
	cq_one(tx_a, "send of the key");
	for (unsigned s = 1; s <= 3; s++) {
		e = cq_one(rx_a, "A's message");
		FT_CHECK((e.flags & FI_REMOTE_CQ_DATA) == 0 && (e.flags & FI_RECV), "A's message %u: flags %#llx", s,
			 (unsigned long long) e.flags);
		check_rx(&e, MSGLEN, s, "A's message");
	}
	step("srx_routing");
	e = cq_one(rx_a, "A's fi_writedata");
	FT_CHECK(e.flags == (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA), "fi_writedata: flags %#llx",
		 (unsigned long long) e.flags);
	FT_CHECK(e.data == A_DATA, "fi_writedata: data %#llx", (unsigned long long) e.data);
	check_rx(&e, WLEN, 0, "A's fi_writedata");
	FT_CHECK(ft_verify(region + RMA, WLEN, 50) < 0, "the written bytes differ");
	step("srx_writedata");
	FT_RC(rx_left(srx), SRX_SIZE - NRX + 5);
	step("srx_size_left");

	/* Refusals (last: a provider that posts them anyway consumes
	 * nothing the traffic above needed). */
	{
		struct iovec iov[9];
		void *d[9];
		size_t n = ra.iov_limit + 1;
		for (size_t i = 0; i < n; i++) {
			iov[i].iov_base = region + OWN + i * 8;
			iov[i].iov_len = 8;
			d[i] = desc;
		}
		FT_RC(fi_recv(srx, region + OWN, 64, NULL, 0, NULL), -FI_EINVAL);
		FT_RC(fi_recvv(srx, iov, d, n, 0, NULL), -FI_EINVAL);
	}
	step("srx_refusals");

	FT_POST(fi_send(ep_a, region + TX, 8, desc, 0, NULL), "fi_send(bye)");
	cq_one(tx_a, "send of the goodbye");
	FT_RC(fi_close(&srx->fid), -FI_EBUSY);
	FT_RC(fi_close(&ep_a->fid), 0);
	ep_a = NULL;
	FT_RC(fi_close(&srx->fid), 0);
	srx = NULL;
	step("srx_close");
	fi_close(&tx_a->fid);
	fi_close(&rx_a->fid);
	fi_close(&tx_b->fid);
	fi_close(&rx_b->fid);
	if (cntr_b)
		fi_close(&cntr_b->fid);
	fi_close(&mr->fid);
	return ft_finish("srx_check");
}

int main(int argc, char **argv)
{
	ft_ep_type = FI_EP_MSG;
	ft_prov = "verbs";
	ft_args(argc, argv, NULL, NULL);
	return ft_is_client() ? client() : server();
}
