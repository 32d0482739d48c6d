/*
 * fi_shared_ctx: shared transmit and receive contexts (fi_endpoint(3),
 * "SHARED CONTEXTS"): NEP endpoints per side opened from an fi_info whose
 * tx_ctx_cnt and rx_ctx_cnt are FI_SHARED_CONTEXT, all bound to one
 * transmit context from fi_stx_context and one receive context from
 * fi_srx_context; receive buffers are posted to the shared receive
 * context. Each endpoint has CQs of its own, so the test sees that a
 * send completes on the CQ of the endpoint it was posted to and that a
 * message addressed to endpoint i completes on endpoint i's receive CQ,
 * whichever shared buffer it landed in.
 *
 *   --no-tx-shared-ctx   endpoints have transmit contexts of their own
 *   --no-rx-shared-ctx   endpoints have receive contexts of their own
 *   -e msg|rdm|dgram     MSG: NEP connections to one listener; RDM and
 *                        DGRAM: endpoint 0 of the server is on -B, the
 *                        others on ports of their own, and the sides
 *                        exchange all names through endpoint 0
 *
 * As upstream's shared_ctx: the hints offer FI_MR_LOCAL (with
 * FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY), and where the entry
 * keeps it every buffer is registered and posted with its descriptor; an
 * MSG server opens its shared contexts at the first connection request,
 * from that request's fi_info; each endpoint binds its EQ (MSG) or AV,
 * then the shared contexts, then its CQs. (Upstream's endpoints share
 * one pair of CQs and its server opens the domain at the first request
 * too; ours has CQs per endpoint, to see where each completion lands.)
 *
 * Traffic: -I rounds; in each, client endpoint i sends to server endpoint
 * i, then the server answers the same way; every message carries its
 * source, destination and sequence and a checked payload, and each must
 * arrive exactly once. A provider that does not advertise shared
 * contexts (fi_getinfo gives -FI_ENODATA for FI_SHARED_CONTEXT) makes the
 * program print "SKIP: ..." and exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define NEP 3
#define PAY 200
#define MAXI 64
#define MAGIC 0x73637478u

enum { NAMES = 1, DATA = 2 };

struct msg {
	uint32_t magic, type, src, dst, seq, namelen;
	unsigned char payload[PAY];
	unsigned char names[NEP][128];
};

static int shared_tx = 1, shared_rx = 1;
static struct fid_stx *stx;
static struct fid_ep *srx;
static struct fid_ep *eps[NEP];
static struct fid_cq *txcq[NEP], *rxcq[NEP];
static fi_addr_t peers[NEP];
static int have_peers;

/* Receive buffers: with a shared receive context all are posted to it,
 * else NRX_PER to each endpoint. */
#define NRX_PER (MAXI + 4)
#define NRX (NEP * NRX_PER)
static struct msg rxbuf[NRX];
static int rx_owner[NRX]; /* endpoint the buffer was posted to (-1: srx) */
static struct msg txbuf[NEP];
/* Descriptors of the two, when the provider wants FI_MR_LOCAL. */
static struct fid_mr *rx_mr, *tx_mr;
static void *rx_desc, *tx_desc;

static void post_rx(int b)
{
	struct fid_ep *target = rx_owner[b] < 0 ? srx : eps[rx_owner[b]];
	FT_POST(fi_recv(target, &rxbuf[b], sizeof(rxbuf[b]), rx_desc, FI_ADDR_UNSPEC, &rxbuf[b]), "fi_recv");
}

static void post_all_rx(void)
{
	for (int b = 0; b < NRX; b++) {
		rx_owner[b] = shared_rx ? -1 : b / NRX_PER;
		post_rx(b);
	}
}

/* Waits for one message on any endpoint's receive CQ (bounded); returns
 * the buffer index and sets *ep to the endpoint whose CQ had it. */
static int recv_any(int *ep, const char *what)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		for (int i = 0; i < NEP; i++) {
			struct fi_cq_msg_entry e;
			struct fi_cq_err_entry err;
			int n = ft_cq_poll(rxcq[i], &e, &err, NULL);
			if (n < 0)
				ft_die("%s: error completion on endpoint %d's receive CQ: %s", what, i, fi_strerror(-n));
			if (n == 0)
				continue;
			int b = (int) ((struct msg *) e.op_context - rxbuf);
			if (b < 0 || b >= NRX)
				ft_die("%s: receive completion with unknown context %p", what, e.op_context);
			FT_CHECK(e.len == sizeof(struct msg), "%s: message of %zu bytes, want %zu", what, e.len,
				 sizeof(struct msg));
			if (rx_owner[b] >= 0 && rx_owner[b] != i)
				FT_CHECK(0, "%s: buffer posted to endpoint %d completed on endpoint %d's CQ", what, rx_owner[b],
					 i);
			*ep = i;
			return b;
		}
	}
	ft_die("%s: no message within %.0f s", what, FT_TIMEOUT);
	return -1;
}

static void send_msg(int i, fi_addr_t dest, uint32_t type, uint32_t dst, uint32_t seq)
{
	struct msg *m = &txbuf[i];
	struct fi_cq_msg_entry e;
	m->magic = MAGIC;
	m->type = type;
	m->src = (uint32_t) i;
	m->dst = dst;
	m->seq = seq;
	ft_fill(m->payload, PAY, seq * 16 + (unsigned) i + (ft_is_client() ? 0 : 8));
	FT_POST(fi_send(eps[i], m, sizeof(*m), tx_desc, dest, m), "fi_send");
	{
		double end = ft_now() + FT_TIMEOUT;
		struct fi_cq_err_entry err;
		int n = 0;
		/* The completion must come on this endpoint's CQ, no other. */
		while (ft_now() < end && !(n = ft_cq_poll(txcq[i], &e, &err, NULL)))
			for (int k = 0; k < NEP; k++)
				if (k != i && ft_cq_poll(txcq[k], &e, &err, NULL))
					FT_CHECK(0, "send on endpoint %d completed on endpoint %d's CQ", i, k);
		if (n < 0)
			ft_die("send on endpoint %d: error completion %s", i, fi_strerror(-n));
		if (!n)
			ft_die("send on endpoint %d: no completion within %.0f s", i, FT_TIMEOUT);
		FT_CHECK(e.op_context == m, "send on endpoint %d: context %p, want %p", i, e.op_context, (void *) m);
	}
}

/* Opens endpoint i from `info`: shared contexts (when used), its CQs, the
 * AV (RDM, DGRAM) or the EQ (MSG); enabled. */
static void open_ep(int i, struct fi_info *info)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 256 };
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &txcq[i], NULL)) || (rc = fi_cq_open(ft_domain, &ca, &rxcq[i], NULL)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if ((rc = fi_endpoint(ft_domain, info, &eps[i], NULL)))
		ft_die("fi_endpoint %d: %s", i, fi_strerror(-rc));
	/* upstream fabtests' order (ft_enable_ep) */
	if (ft_ep_type == FI_EP_MSG && (rc = fi_ep_bind(eps[i], &ft_eq->fid, 0)))
		ft_die("fi_ep_bind(endpoint %d, eq): %s", i, fi_strerror(-rc));
	if (ft_av && (rc = fi_ep_bind(eps[i], &ft_av->fid, 0)))
		ft_die("fi_ep_bind(endpoint %d, av): %s", i, fi_strerror(-rc));
	if (stx && (rc = fi_ep_bind(eps[i], &stx->fid, 0)))
		ft_die("fi_ep_bind(endpoint %d, shared tx context): %s", i, fi_strerror(-rc));
	if (srx && (rc = fi_ep_bind(eps[i], &srx->fid, 0)))
		ft_die("fi_ep_bind(endpoint %d, shared rx context): %s", i, fi_strerror(-rc));
	if ((rc = fi_ep_bind(eps[i], &txcq[i]->fid, FI_TRANSMIT)) || (rc = fi_ep_bind(eps[i], &rxcq[i]->fid, FI_RECV)))
		ft_die("fi_ep_bind(endpoint %d, cq): %s", i, fi_strerror(-rc));
	if ((rc = fi_enable(eps[i])))
		ft_die("fi_enable(endpoint %d): %s", i, fi_strerror(-rc));
}

static void set_counts(struct fi_info *info)
{
	if (shared_tx)
		info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	if (shared_rx)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
}

/* The shared contexts in use, from `info`'s attributes (upstream's
 * ft_open_domain_res: the entry's tx_attr and rx_attr). */
static void open_shared(struct fi_info *info)
{
	int rc;
	if (shared_tx && (rc = fi_stx_context(ft_domain, info->tx_attr, &stx, NULL)))
		ft_die("fi_stx_context: %s", fi_strerror(-rc));
	if (shared_rx && (rc = fi_srx_context(ft_domain, info->rx_attr, &srx, NULL)))
		ft_die("fi_srx_context: %s", fi_strerror(-rc));
}

/* MSG: NEP connections, endpoint i of the client to endpoint i of the
 * server (requests accepted in the order they come; on the server's one
 * EQ an FI_CONNECTED may follow the next FI_CONNREQ). */
static void connect_all(void)
{
	struct fi_eq_cm_entry cm;
	int rc, accepted = 0, connected = 0;
	if (ft_is_client()) {
		for (int i = 0; i < NEP; i++) {
			open_ep(i, ft_info);
			if ((rc = fi_connect(eps[i], ft_info->dest_addr, NULL, 0)))
				ft_die("fi_connect %d: %s", i, fi_strerror(-rc));
			ft_eq_expect(FI_CONNECTED, &cm, sizeof(cm));
			FT_CHECK(cm.fid == &eps[i]->fid, "FI_CONNECTED for another endpoint than %d", i);
		}
		return;
	}
	ft_listen();
	while (connected < NEP) {
		struct fi_eq_err_entry err;
		uint32_t event = 0;
		if (ft_eq_wait(&cm, sizeof(cm), &err, &event) == -FI_EAVAIL)
			ft_die("EQ error while accepting: %s", fi_strerror(err.err));
		if (event == FI_CONNREQ && accepted < NEP) {
			int i = accepted++;
			/* As upstream: the request's fi_info as it comes; the
			 * shared contexts from the first one's attributes. */
			if (i == 0)
				open_shared(cm.info);
			open_ep(i, cm.info);
			fi_freeinfo(cm.info);
			if ((rc = fi_accept(eps[i], NULL, 0)))
				ft_die("fi_accept %d: %s", i, fi_strerror(-rc));
		} else if (event == FI_CONNECTED) {
			connected++;
		} else {
			ft_die("EQ event %u while accepting (%d accepted, %d connected)", event, accepted, connected);
		}
	}
}

/* RDM, DGRAM: endpoint 0 of the server on -B, the rest on ports of their
 * own; all names go through endpoint 0. */
static void open_connectionless(void)
{
	struct fi_info *other = fi_dupinfo(ft_info);
	if (!other)
		ft_die("fi_dupinfo");
	if (other->src_addr && ((struct sockaddr *) other->src_addr)->sa_family == AF_INET)
		((struct sockaddr_in *) other->src_addr)->sin_port = 0;
	else if (other->src_addr && ((struct sockaddr *) other->src_addr)->sa_family == AF_INET6)
		((struct sockaddr_in6 *) other->src_addr)->sin6_port = 0;
	for (int i = 0; i < NEP; i++)
		open_ep(i, i == 0 ? ft_info : other);
	fi_freeinfo(other);
}

static void fill_names(struct msg *m)
{
	size_t len = sizeof(m->names[0]);
	for (int i = 0; i < NEP; i++) {
		len = sizeof(m->names[i]);
		int rc = fi_getname(&eps[i]->fid, m->names[i], &len);
		if (rc)
			ft_die("fi_getname(endpoint %d): %s", i, fi_strerror(-rc));
	}
	m->namelen = (uint32_t) len;
}

static void insert_names(const struct msg *m)
{
	for (int i = 0; i < NEP; i++)
		if (fi_av_insert(ft_av, m->names[i], 1, &peers[i], 0, NULL) != 1)
			ft_die("fi_av_insert(peer endpoint %d)", i);
	have_peers = 1;
}

/* Client: sends its names until the server's come back (DGRAM may lose
 * either). Server: waits for the client's names and answers. */
static void exchange_names(void)
{
	int ep, b;
	if (ft_is_client()) {
		fi_addr_t server0;
		if (fi_av_insert(ft_av, ft_info->dest_addr, 1, &server0, 0, NULL) != 1)
			ft_die("fi_av_insert(server)");
		for (int tries = 0; !have_peers; tries++) {
			struct fi_cq_msg_entry e;
			struct fi_cq_err_entry err;
			double end;
			if (tries == 20)
				ft_die("no names from the server after %d tries", tries);
			fill_names(&txbuf[0]);
			send_msg(0, server0, NAMES, 0, 0);
			end = ft_now() + (ft_ep_type == FI_EP_DGRAM ? 0.5 : FT_TIMEOUT);
			while (ft_now() < end && !have_peers) {
				int n = ft_cq_poll(rxcq[0], &e, &err, NULL);
				if (n < 0)
					ft_die("receive of the server's names: %s", fi_strerror(-n));
				if (n == 0)
					continue;
				b = (int) ((struct msg *) e.op_context - rxbuf);
				FT_CHECK(rxbuf[b].type == NAMES, "first message from the server has type %u", rxbuf[b].type);
				insert_names(&rxbuf[b]);
				post_rx(b);
			}
		}
	} else {
		b = recv_any(&ep, "receive of the client's names");
		FT_CHECK(ep == 0 && rxbuf[b].type == NAMES, "names arrived on endpoint %d with type %u", ep,
			 rxbuf[b].type);
		insert_names(&rxbuf[b]);
		post_rx(b);
		fill_names(&txbuf[0]);
		send_msg(0, peers[0], NAMES, 0, 0);
	}
}

/* Receives NEP * iters data messages, each exactly once, each on the
 * endpoint it was sent to. The server answers repeated names (DGRAM). */
static void receive_round(int iters)
{
	static int seen[NEP][MAXI];
	memset(seen, 0, sizeof(seen));
	for (int got = 0; got < NEP * iters;) {
		int ep, b = recv_any(&ep, "receive of data");
		struct msg *m = &rxbuf[b];
		if (m->magic == MAGIC && m->type == NAMES && !ft_is_client()) {
			fill_names(&txbuf[0]);
			send_msg(0, peers[0], NAMES, 0, 0);
			post_rx(b);
			continue;
		}
		if (m->magic != MAGIC || m->type != DATA || m->src >= NEP || m->seq >= (uint32_t) iters) {
			FT_CHECK(0, "endpoint %d received a message that is not data (magic %#x type %u src %u seq %u)", ep,
				 m->magic, m->type, m->src, m->seq);
			post_rx(b);
			continue;
		}
		FT_CHECK(m->dst == (uint32_t) ep && m->src == (uint32_t) ep,
			 "message from peer endpoint %u to endpoint %u completed on endpoint %d's CQ", m->src, m->dst, ep);
		long bad = ft_verify(m->payload, PAY, m->seq * 16 + m->src + (ft_is_client() ? 8 : 0));
		FT_CHECK(bad < 0, "message %u from endpoint %u: payload byte %ld differs", m->seq, m->src, bad);
		seen[m->src][m->seq]++;
		FT_CHECK(seen[m->src][m->seq] == 1, "message %u from endpoint %u arrived %d times", m->seq, m->src,
			 seen[m->src][m->seq]);
		got++;
		post_rx(b);
	}
}

static void send_round(int iters)
{
	for (int s = 0; s < iters; s++)
		for (int i = 0; i < NEP; i++)
			send_msg(i, peers[i], DATA, (uint32_t) i, (uint32_t) s);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	char *args[64], what[96];
	int n = 0, rc;

	for (int i = 0; i < argc && n < 63; i++) {
		if (!strcmp(argv[i], "--no-tx-shared-ctx"))
			shared_tx = 0;
		else if (!strcmp(argv[i], "--no-rx-shared-ctx"))
			shared_rx = 0;
		else
			args[n++] = argv[i];
	}
	args[n] = NULL;
	ft_args(n, args, NULL, NULL);
	if (ft_opts.iters > MAXI)
		ft_opts.iters = MAXI;
	hints = ft_hints(FI_MSG);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	set_counts(hints);
	snprintf(what, sizeof(what), "shared %s contexts on %s endpoints",
		 shared_tx && shared_rx ? "transmit and receive" : shared_tx ? "transmit" : "receive",
		 ft_ep_type == FI_EP_MSG ? "msg" : ft_ep_type == FI_EP_DGRAM ? "dgram" : "rdm");
	ft_require(hints, what);
	ft_setup(hints);
	if (shared_tx)
		FT_CHECK(ft_info->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT, "fi_info tx_ctx_cnt %zu, want FI_SHARED_CONTEXT",
			 ft_info->ep_attr->tx_ctx_cnt);
	if (shared_rx)
		FT_CHECK(ft_info->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT, "fi_info rx_ctx_cnt %zu, want FI_SHARED_CONTEXT",
			 ft_info->ep_attr->rx_ctx_cnt);
	if (ft_ep_type != FI_EP_MSG || ft_is_client())
		open_shared(ft_info);
	if (ft_info->domain_attr->mr_mode & FI_MR_LOCAL) {
		if ((rc = fi_mr_reg(ft_domain, rxbuf, sizeof(rxbuf), FI_RECV, 0, 0, 0, &rx_mr, NULL)) ||
		    (rc = fi_mr_reg(ft_domain, txbuf, sizeof(txbuf), FI_SEND, 0, 0, 0, &tx_mr, NULL)))
			ft_die("fi_mr_reg: %s", fi_strerror(-rc));
		rx_desc = fi_mr_desc(rx_mr);
		tx_desc = fi_mr_desc(tx_mr);
	}
	if (ft_ep_type != FI_EP_MSG) {
		struct fi_av_attr aa = { .type = FI_AV_TABLE };
		if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
			ft_die("fi_av_open: %s", fi_strerror(-rc));
	}
	if (ft_ep_type == FI_EP_MSG) {
		/* Endpoints exist only once connected: receives go after. */
		connect_all();
		post_all_rx();
	} else {
		open_connectionless();
		post_all_rx();
		exchange_names();
	}
	ft_log("%d endpoints up (shared tx %d, shared rx %d)", NEP, shared_tx, shared_rx);
	if (ft_is_client()) {
		send_round(ft_opts.iters);
		receive_round(ft_opts.iters);
	} else {
		receive_round(ft_opts.iters);
		send_round(ft_opts.iters);
	}
	ft_log("%d messages each way checked", NEP * ft_opts.iters);
	/* Receives still posted are flushed by closing. */
	for (int i = 0; i < NEP; i++) {
		if (eps[i])
			fi_close(&eps[i]->fid);
		if (txcq[i])
			fi_close(&txcq[i]->fid);
		if (rxcq[i])
			fi_close(&rxcq[i]->fid);
	}
	if (srx)
		FT_RC(fi_close(&srx->fid), 0);
	if (stx)
		FT_RC(fi_close(&stx->fid), 0);
	if (rx_mr)
		fi_close(&rx_mr->fid);
	if (tx_mr)
		fi_close(&tx_mr->fid);
	return ft_finish("fi_shared_ctx");
}
