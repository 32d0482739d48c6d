/*
 * fi_scalable_ep: scalable endpoints (fi_endpoint(3), "SCALABLE
 * ENDPOINTS") on RDM (default) or DGRAM: fi_scalable_ep with NCTX
 * transmit and NCTX receive contexts, fi_scalable_ep_bind of the AV
 * (opened with rx_ctx_bits for NCTX contexts), fi_tx_context and
 * fi_rx_context, each context with a CQ of its own, and FI_NAMED_RX_CTX:
 * a sender picks the peer's receive context j with fi_rx_addr(peer, j,
 * rx_ctx_bits).
 *
 * The client sends its name from transmit context 0 to the server's
 * receive context 0; the server answers the same way. Then, -I rounds:
 * every client transmit context i sends to every server receive context
 * j, and the server checks that each message arrived on the CQ of the
 * context j it names, with its payload, exactly once; then the server
 * does the same toward the client. Each send completes on the CQ of its
 * own transmit context. A provider without scalable endpoints of NCTX
 * contexts or without FI_NAMED_RX_CTX makes the program print "SKIP: ..."
 * and exit 77.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"

#define NCTX 4
#define CTX_BITS 2
#define PAY 128
#define MAXI 16
#define MAGIC 0x73657021u

struct msg {
	uint32_t magic, tx, rx, seq;
	unsigned char payload[PAY];
	unsigned char name[256];
	uint32_t namelen;
};

static struct fid_ep *sep, *txc[NCTX], *rxc[NCTX];
static struct fid_cq *txcq[NCTX], *rxcq[NCTX];
static fi_addr_t peer;
#define NRX (NCTX * MAXI + 2)
static struct msg rxbuf[NCTX][NRX];
static struct msg txbuf[NCTX];

static void post_rx(int j, int b)
{
	FT_POST(fi_recv(rxc[j], &rxbuf[j][b], sizeof(struct msg), NULL, FI_ADDR_UNSPEC, &rxbuf[j][b]), "fi_recv");
}

/* Sends `m` from transmit context i to receive context j of the peer
 * and waits for the completion on context i's CQ (and no other). */
static void send_to(int i, int j, uint32_t seq, int with_name)
{
	struct msg *m = &txbuf[i];
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	double end;
	int n = 0;
	m->magic = MAGIC;
	m->tx = (uint32_t) i;
	m->rx = (uint32_t) j;
	m->seq = seq;
	ft_fill(m->payload, PAY, seq * 64 + (unsigned) (i * NCTX + j) + (ft_is_client() ? 0 : 32));
	if (with_name) {
		size_t len = sizeof(m->name);
		int rc = fi_getname(&sep->fid, m->name, &len);
		if (rc)
			ft_die("fi_getname(scalable endpoint): %s", fi_strerror(-rc));
		m->namelen = (uint32_t) len;
	}
	FT_POST(fi_send(txc[i], m, sizeof(*m), NULL, fi_rx_addr(peer, j, CTX_BITS), m), "fi_send");
	for (end = ft_now() + FT_TIMEOUT; ft_now() < end && !(n = ft_cq_poll(txcq[i], &e, &err, NULL));)
		for (int k = 0; k < NCTX; k++)
			if (k != i && ft_cq_poll(txcq[k], &e, &err, NULL))
				FT_CHECK(0, "send on transmit context %d completed on context %d's CQ", i, k);
	if (n < 0)
		ft_die("send from transmit context %d to receive context %d: %s", i, j, fi_strerror(-n));
	if (!n)
		ft_die("send from transmit context %d: no completion within %.0f s", i, FT_TIMEOUT);
}

/* Waits for one message on receive context j's CQ; returns the buffer. */
static struct msg *recv_on(int j, const char *what)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		struct fi_cq_msg_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_poll(rxcq[j], &e, &err, NULL);
		if (n < 0)
			ft_die("%s: error completion on receive context %d: %s", what, j, fi_strerror(-n));
		if (n)
			return e.op_context;
	}
	ft_die("%s: nothing on receive context %d within %.0f s", what, j, FT_TIMEOUT);
	return NULL;
}

static void receive_round(int iters)
{
	static int seen[NCTX][NCTX][MAXI];
	memset(seen, 0, sizeof(seen));
	for (int j = 0; j < NCTX; j++) {
		for (int k = 0; k < NCTX * iters; k++) {
			struct msg *m = recv_on(j, "receive of data");
			if (m->magic != MAGIC || m->tx >= NCTX || m->seq >= (uint32_t) iters) {
				FT_CHECK(0, "receive context %d: message with magic %#x tx %u seq %u", j, m->magic, m->tx,
					 m->seq);
				continue;
			}
			FT_CHECK(m->rx == (uint32_t) j, "message for receive context %u arrived on context %d", m->rx, j);
			long bad = ft_verify(m->payload, PAY,
					     m->seq * 64 + m->tx * NCTX + m->rx + (ft_is_client() ? 32 : 0));
			FT_CHECK(bad < 0, "message %u from tx %u to rx %u: payload byte %ld differs", m->seq, m->tx, m->rx,
				 bad);
			if (m->rx < NCTX && ++seen[m->tx][m->rx][m->seq] != 1)
				FT_CHECK(0, "message %u from tx %u to rx %u arrived %d times", m->seq, m->tx, m->rx,
					 seen[m->tx][m->rx][m->seq]);
		}
	}
}

static void send_round(int iters)
{
	for (int s = 0; s < iters; s++)
		for (int i = 0; i < NCTX; i++)
			for (int j = 0; j < NCTX; j++)
				send_to(i, j, (uint32_t) s, 0);
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *probe = NULL;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 512 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .rx_ctx_bits = CTX_BITS };
	int rc;

	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type == FI_EP_MSG)
		ft_die("fi_scalable_ep needs -e rdm or -e dgram");
	if (ft_opts.iters > MAXI)
		ft_opts.iters = MAXI;
	hints = ft_hints(FI_MSG | FI_NAMED_RX_CTX);
	hints->ep_attr->tx_ctx_cnt = NCTX;
	hints->ep_attr->rx_ctx_cnt = NCTX;
	ft_require(hints, "scalable endpoints with FI_NAMED_RX_CTX");
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &probe);
	if (!rc && (probe->domain_attr->max_ep_tx_ctx < NCTX || probe->domain_attr->max_ep_rx_ctx < NCTX))
		rc = -FI_ENODATA;
	fi_freeinfo(probe);
	if (rc == -FI_ENODATA) {
		printf("SKIP: %s lacks scalable endpoints with %d tx/rx contexts and FI_NAMED_RX_CTX\n", ft_prov, NCTX);
		fi_freeinfo(hints);
		return 77;
	}
	ft_setup(hints);
	FT_CHECK(ft_info->caps & FI_NAMED_RX_CTX, "fi_info caps lack FI_NAMED_RX_CTX");
	FT_CHECK(ft_info->ep_attr->tx_ctx_cnt >= NCTX && ft_info->ep_attr->rx_ctx_cnt >= NCTX,
		 "fi_info tx_ctx_cnt %zu rx_ctx_cnt %zu, want %d", ft_info->ep_attr->tx_ctx_cnt,
		 ft_info->ep_attr->rx_ctx_cnt, NCTX);
	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open(rx_ctx_bits %d): %s", CTX_BITS, fi_strerror(-rc));
	if ((rc = fi_scalable_ep(ft_domain, ft_info, &sep, NULL)))
		ft_die("fi_scalable_ep: %s", fi_strerror(-rc));
	if ((rc = fi_scalable_ep_bind(sep, &ft_av->fid, 0)))
		ft_die("fi_scalable_ep_bind(av): %s", fi_strerror(-rc));
	for (int i = 0; i < NCTX; i++) {
		if ((rc = fi_tx_context(sep, i, NULL, &txc[i], NULL)))
			ft_die("fi_tx_context(%d): %s", i, fi_strerror(-rc));
		if ((rc = fi_rx_context(sep, i, NULL, &rxc[i], NULL)))
			ft_die("fi_rx_context(%d): %s", i, fi_strerror(-rc));
		if ((rc = fi_cq_open(ft_domain, &ca, &txcq[i], NULL)) || (rc = fi_cq_open(ft_domain, &ca, &rxcq[i], NULL)))
			ft_die("fi_cq_open: %s", fi_strerror(-rc));
		if ((rc = fi_ep_bind(txc[i], &txcq[i]->fid, FI_SEND)))
			ft_die("fi_ep_bind(tx context %d, cq): %s", i, fi_strerror(-rc));
		if ((rc = fi_ep_bind(rxc[i], &rxcq[i]->fid, FI_RECV)))
			ft_die("fi_ep_bind(rx context %d, cq): %s", i, fi_strerror(-rc));
		if ((rc = fi_enable(txc[i])) || (rc = fi_enable(rxc[i])))
			ft_die("fi_enable(context %d): %s", i, fi_strerror(-rc));
	}
	if ((rc = fi_enable(sep)))
		ft_die("fi_enable(scalable endpoint): %s", fi_strerror(-rc));
	for (int j = 0; j < NCTX; j++)
		for (int b = 0; b < NRX; b++)
			post_rx(j, b);

	if (ft_is_client()) {
		if (fi_av_insert(ft_av, ft_info->dest_addr, 1, &peer, 0, NULL) != 1)
			ft_die("fi_av_insert(server)");
		send_to(0, 0, 0, 1);
		struct msg *m = recv_on(0, "receive of the server's name");
		FT_CHECK(m->magic == MAGIC && m->tx == 0 && m->rx == 0, "server's answer: magic %#x tx %u rx %u", m->magic,
			 m->tx, m->rx);
		send_round(ft_opts.iters);
		receive_round(ft_opts.iters);
	} else {
		struct msg *m = recv_on(0, "receive of the client's name");
		if (m->magic != MAGIC || fi_av_insert(ft_av, m->name, 1, &peer, 0, NULL) != 1)
			ft_die("client's name: magic %#x, or fi_av_insert failed", m->magic);
		send_to(0, 0, 0, 1);
		receive_round(ft_opts.iters);
		send_round(ft_opts.iters);
	}
	ft_log("%d messages on every context pair each way", ft_opts.iters);
	for (int i = 0; i < NCTX; i++) {
		FT_RC(fi_close(&txc[i]->fid), 0);
		FT_RC(fi_close(&rxc[i]->fid), 0);
	}
	FT_RC(fi_close(&sep->fid), 0);
	for (int i = 0; i < NCTX; i++) {
		fi_close(&txcq[i]->fid);
		fi_close(&rxcq[i]->fid);
	}
	return ft_finish("fi_scalable_ep");
}
