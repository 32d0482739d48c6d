/*
 * fi_rdm: two-sided traffic on a reliable datagram endpoint, one behaviour
 * per phase, both sides in lockstep (phases end with a tagged sync):
 *
 *  sizes      messages and tagged messages (fi_tsenddata) of 0 B .. -S
 *             bytes (default 64 MiB) each way, payload checked; completion
 *             flags (FI_SEND|FI_MSG, FI_SEND|FI_TAGGED, FI_RECV|FI_MSG,
 *             FI_RECV|FI_TAGGED|FI_REMOTE_CQ_DATA), op_context, len, tag,
 *             data
 *  match      fi_trecv tag/ignore matching, receives posted in an order
 *             other than the messages' (expected and unexpected paths)
 *  directed   FI_DIRECTED_RECV: a receive for the client's first endpoint
 *             does not take a message from its second endpoint
 *  sas        FI_ORDER_SAS: many back-to-back sends land in posting order
 *  selective  FI_SELECTIVE_COMPLETION on the transmit CQ: only fi_sendmsg
 *             with FI_COMPLETION produces a send completion
 *  compflags  fi_sendmsg with FI_INJECT_COMPLETE / FI_TRANSMIT_COMPLETE /
 *             FI_DELIVERY_COMPLETE completes and delivers
 *  cancel     fi_cancel of posted receives: FI_ECANCELED error completions
 *             with their op_context; later messages go to new receives
 *  trunc      a message larger than the receive buffer (posted before or
 *             after it arrived): FI_ETRUNC, olen = the bytes that did not
 *             fit, the bytes that fit placed, nothing past the buffer
 *  eagain     sends posted without reading the CQ meet -FI_EAGAIN within
 *             4 * tx_attr->size posts; every message arrives, every send
 *             completes, and the queue accepts again
 *
 * The client opens a second endpoint (same AV, transmit CQ bound with
 * FI_SELECTIVE_COMPLETION) for "directed", "selective" and as the side
 * channel of "eagain". Run: -e rdm [-S max-size] [-x phase]... (-x skips a
 * phase, for comparing with providers that fail an earlier one).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

static struct xf_ep ep2; /* client only */
static fi_addr_t peer2 = FI_ADDR_UNSPEC; /* server: the client's ep2 */
static char *txbuf, *rxbuf;
static size_t bufsize;

#define TAG_NAME 0x4e4e
#define MSGF (FI_SEND | FI_MSG)

static void check_flags(uint64_t got, uint64_t want, const char *what)
{
	FT_CHECK((got & XF_OPFLAGS) == want, "%s: flags %#llx, want %#llx", what,
		 (unsigned long long) (got & XF_OPFLAGS), (unsigned long long) want);
}

/* The client's second endpoint and its address at the server. */
static void setup_ep2(void)
{
	struct fi_cq_tagged_entry e;
	char name[256];
	size_t len = sizeof(name);
	int rc;
	if (ft_is_client()) {
		xf_open_ep(&ep2, ft_info, ft_av, FI_CQ_FORMAT_TAGGED, FI_SELECTIVE_COMPLETION);
		if ((rc = fi_getname(&ep2.ep->fid, name, &len)))
			ft_die("fi_getname(ep2): %s", fi_strerror(-rc));
		FT_POST(fi_tsend(ft_ep, name, len, NULL, ft_peer, TAG_NAME, NULL), "fi_tsend(ep2 name)");
		ft_cq_ok(ft_txcq, &e, "send of ep2's name");
	} else {
		FT_POST(fi_trecv(ft_ep, name, sizeof(name), NULL, ft_peer, TAG_NAME, 0, NULL), "fi_trecv(ep2 name)");
		ft_cq_ok(ft_rxcq, &e, "receive of ep2's name");
		if ((rc = fi_av_insert(ft_av, name, 1, &peer2, 0, NULL)) != 1)
			ft_die("fi_av_insert(ep2) = %d", rc);
	}
	xf_tsync();
}

/* ---- sizes ---- */

/* One message of `size` bytes from `from_client` side to the other, as a
 * message (tagged == 0) or tagged message with remote CQ data. */
static void one_way(size_t size, int tagged, int from_client)
{
	struct fi_cq_tagged_entry e;
	uint64_t tag = 0x10000000ULL | size, data = 0xda7a000000000000ULL | size;
	size_t off = size * 3 + (size_t) from_client * 5 + (size_t) tagged;
	char what[96];
	snprintf(what, sizeof(what), "%s of %zu bytes %s", tagged ? "tagged message" : "message", size,
		 from_client ? "client->server" : "server->client");
	if (ft_is_client() == from_client) {
		xf_fill_at(txbuf, size, off);
		if (tagged)
			FT_POST(fi_tsenddata(ft_ep, txbuf, size, NULL, data, ft_peer, tag, txbuf), "fi_tsenddata");
		else
			FT_POST(fi_send(ft_ep, txbuf, size, NULL, ft_peer, txbuf), "fi_send");
		if (!xf_cq_get(ft_txcq, &e, what))
			return;
		FT_CHECK(e.op_context == txbuf, "%s: send op_context %p", what, e.op_context);
		check_flags(e.flags, tagged ? (FI_SEND | FI_TAGGED) : MSGF, what);
	} else {
		memset(rxbuf, 0xee, size + 16 <= bufsize ? size + 16 : size);
		if (tagged)
			FT_POST(fi_trecv(ft_ep, rxbuf, size, NULL, ft_peer, tag, 0, rxbuf), "fi_trecv");
		else
			FT_POST(fi_recv(ft_ep, rxbuf, size, NULL, ft_peer, rxbuf), "fi_recv");
		if (!xf_cq_get(ft_rxcq, &e, what))
			return;
		FT_CHECK(e.op_context == rxbuf, "%s: receive op_context %p", what, e.op_context);
		FT_CHECK(e.len == size, "%s: len %zu", what, e.len);
		check_flags(e.flags, tagged ? (FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA) : (FI_RECV | FI_MSG), what);
		if (tagged) {
			FT_CHECK(e.tag == tag, "%s: tag %#llx", what, (unsigned long long) e.tag);
			FT_CHECK(e.data == data, "%s: data %#llx", what, (unsigned long long) e.data);
		}
		long bad = xf_verify_at(rxbuf, size, off);
		FT_CHECK(bad < 0, "%s: byte %ld differs", what, bad);
	}
}

static void phase_sizes(void)
{
	static const size_t sizes[] = { 0, 1, 3, 8, 63, 64, 65, 1000, 4095, 4096, 4097, 16383, 16384, 16385,
					65535, 65536, 65537, 1 << 18, (1 << 20) + 7, 4 << 20, 16 << 20, 64 << 20 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i];
		if (size > ft_opts.size)
			break;
		for (int tagged = 0; tagged < 2; tagged++) {
			one_way(size, tagged, 1);
			one_way(size, tagged, 0);
		}
		ft_log("sizes: %zu bytes both ways, message and tagged", size);
	}
	xf_tsync();
}

/* ---- match ---- */

static void match_round(const uint64_t *send_tags, const uint64_t *post_tags, const uint64_t *ignores,
			const uint64_t *want_tags, int unexpected)
{
	static char rb[3][64];
	struct fi_cq_tagged_entry e;
	if (ft_is_client()) {
		if (!unexpected)
			xf_tsync();
		for (int i = 0; i < 3; i++) {
			xf_fill_at(txbuf + 64 * i, 64, send_tags[i]);
			FT_POST(fi_tsend(ft_ep, txbuf + 64 * i, 64, NULL, ft_peer, send_tags[i], NULL), "fi_tsend");
		}
		for (int i = 0; i < 3; i++)
			xf_cq_get(ft_txcq, &e, "tagged send");
		if (unexpected)
			xf_tsync();
	} else {
		if (unexpected)
			xf_tsync(); /* the three messages came first (FI_ORDER_SAS) */
		for (int i = 0; i < 3; i++)
			FT_POST(fi_trecv(ft_ep, rb[i], 64, NULL, ft_peer, post_tags[i], ignores[i], rb[i]), "fi_trecv");
		if (!unexpected)
			xf_tsync();
		for (int n = 0; n < 3; n++) {
			if (!xf_cq_get(ft_rxcq, &e, "tagged receive"))
				continue;
			int i = (int) ((char(*)[64]) e.op_context - rb);
			if (i < 0 || i > 2) {
				FT_CHECK(0, "tagged receive: unknown op_context %p", e.op_context);
				continue;
			}
			FT_CHECK(e.tag == want_tags[i], "%s: receive %d (tag %#llx ignore %#llx) got tag %#llx, want %#llx",
				 unexpected ? "unexpected" : "expected", i, (unsigned long long) post_tags[i],
				 (unsigned long long) ignores[i], (unsigned long long) e.tag,
				 (unsigned long long) want_tags[i]);
			FT_CHECK(xf_verify_at(rb[i], 64, want_tags[i]) < 0, "receive %d: payload is not tag %#llx's", i,
				 (unsigned long long) want_tags[i]);
			check_flags(e.flags, FI_RECV | FI_TAGGED, "tagged receive");
			/* Expected path: the messages arrive in send order, so
			 * the receive posted last completes first. */
			if (!unexpected && n == 0)
				FT_CHECK(i == 2, "first completion is receive %d, want 2 (tag %#llx was sent first)", i,
					 (unsigned long long) send_tags[0]);
		}
	}
	xf_tsync();
}

static void phase_match(void)
{
	/* posted: exact 0x3, 0x1xx, exact 0x1; sent: 0x1, 0x1ab, 0x3 */
	static const uint64_t s1[3] = { 0x1, 0x1ab, 0x3 }, p1[3] = { 0x3, 0x100, 0x1 }, i1[3] = { 0, 0xff, 0 },
			      w1[3] = { 0x3, 0x1ab, 0x1 };
	/* sent first, posted later: exact 0x23, 0x1xx, exact 0x21 */
	static const uint64_t s2[3] = { 0x21, 0x1cd, 0x23 }, p2[3] = { 0x23, 0x100, 0x21 }, i2[3] = { 0, 0xff, 0 },
			      w2[3] = { 0x23, 0x1cd, 0x21 };
	match_round(s1, p1, i1, w1, 0);
	match_round(s2, p2, i2, w2, 1);
	ft_log("match: done");
}

/* ---- directed ---- */

static void phase_directed(void)
{
	struct fi_cq_tagged_entry e;
	static char a[128], b[128];
	if (ft_is_client()) {
		struct iovec iov = { txbuf, 128 };
		struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .tag = 0x500, .context = &ep2 };
		xf_tsync();
		xf_fill_at(txbuf, 128, 0x502);
		/* Delivery complete: the server has seen it (and must not have
		 * matched it to its directed receive) before ep1 sends. */
		FT_POST(fi_tsendmsg(ep2.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE), "fi_tsendmsg(ep2)");
		if (xf_cq_get(ep2.txcq, &e, "ep2 send"))
			FT_CHECK(e.op_context == &ep2, "ep2 send op_context %p", e.op_context);
		xf_fill_at(txbuf + 128, 128, 0x501);
		FT_POST(fi_tsend(ft_ep, txbuf + 128, 128, NULL, ft_peer, 0x500, NULL), "fi_tsend(ep1)");
		xf_cq_get(ft_txcq, &e, "ep1 send");
	} else {
		FT_POST(fi_trecv(ft_ep, a, sizeof(a), NULL, ft_peer, 0x500, 0, a), "fi_trecv(from ep1)");
		xf_tsync();
		if (xf_cq_get(ft_rxcq, &e, "directed receive from ep1")) {
			FT_CHECK(e.op_context == a, "directed receive: op_context %p", e.op_context);
			FT_CHECK(xf_verify_at(a, 128, 0x501) < 0,
				 "receive directed at ep1 got %s", xf_verify_at(a, 128, 0x502) < 0 ? "ep2's message" : "garbage");
		}
		FT_POST(fi_trecv(ft_ep, b, sizeof(b), NULL, peer2, 0x500, 0, b), "fi_trecv(from ep2)");
		if (xf_cq_get(ft_rxcq, &e, "directed receive from ep2")) {
			FT_CHECK(e.op_context == b, "directed receive: op_context %p", e.op_context);
			FT_CHECK(xf_verify_at(b, 128, 0x502) < 0, "receive directed at ep2: wrong payload");
		}
	}
	xf_tsync();
	ft_log("directed: done");
}

/* ---- sas ---- */

#define SAS_N 300
static size_t sas_size(int i)
{
	static const size_t s[] = { 8, 5000, 70000, 0, 300 };
	return s[i % 5];
}

static void phase_sas(void)
{
	struct fi_cq_tagged_entry e;
	size_t max = 70000;
	if (ft_is_client()) {
		xf_fill_at(txbuf, SAS_N * 13 + 7 + max, 0);
		xf_tsync();
		for (int i = 0; i < SAS_N; i++) {
			for (int t = 0; t < 2; t++) {
				char *p = txbuf + (size_t) i * 13 + (size_t) t * 7;
				if (t)
					FT_POST(fi_tsend(ft_ep, p, sas_size(i), NULL, ft_peer, 0x700, NULL), "fi_tsend(sas)");
				else
					FT_POST(fi_send(ft_ep, p, sas_size(i), NULL, ft_peer, NULL), "fi_send(sas)");
			}
		}
		for (int i = 0; i < 2 * SAS_N; i++)
			if (!xf_cq_get(ft_txcq, &e, "sas send"))
				break;
	} else {
		char *rb = malloc(2 * SAS_N * max);
		int bad = 0;
		if (!rb)
			ft_die("malloc");
		for (int i = 0; i < SAS_N; i++) {
			FT_POST(fi_recv(ft_ep, rb + (2 * i) * max, max, NULL, ft_peer, rb + (2 * i) * max), "fi_recv(sas)");
			FT_POST(fi_trecv(ft_ep, rb + (2 * i + 1) * max, max, NULL, ft_peer, 0x700, 0, rb + (2 * i + 1) * max),
				"fi_trecv(sas)");
		}
		xf_tsync();
		for (int n = 0; n < 2 * SAS_N; n++) {
			if (!xf_cq_get(ft_rxcq, &e, "sas receive"))
				break;
			size_t k = (size_t) ((char *) e.op_context - rb) / max;
			int i = (int) (k / 2), t = (int) (k % 2);
			if (k >= 2 * SAS_N) {
				FT_CHECK(0, "sas: unknown op_context %p", e.op_context);
				continue;
			}
			if (bad < 3 && (e.len != sas_size(i) ||
					xf_verify_at(rb + k * max, sas_size(i), (size_t) i * 13 + (size_t) t * 7) >= 0)) {
				bad++;
				FT_CHECK(0, "sas: %s receive %d holds len %zu / wrong payload; want send %d (len %zu)",
					 t ? "tagged" : "untagged", i, e.len, i, sas_size(i));
			}
		}
		free(rb);
	}
	xf_tsync();
	ft_log("sas: %d messages and %d tagged messages", SAS_N, SAS_N);
}

/* ---- selective ---- */

static void phase_selective(void)
{
	struct fi_cq_tagged_entry e;
	if (ft_is_client()) {
		static int c0, c1, c2;
		struct iovec iov[2] = { { txbuf + 100, 100 }, { txbuf + 200, 100 } };
		struct fi_msg m1 = { .msg_iov = &iov[0], .iov_count = 1, .addr = ft_peer, .context = &c1 };
		struct fi_msg m2 = { .msg_iov = &iov[1], .iov_count = 1, .addr = ft_peer, .context = &c2 };
		for (int i = 0; i < 3; i++)
			xf_fill_at(txbuf + 100 * i, 100, 0x800 + i);
		xf_tsync();
		FT_POST(fi_send(ep2.ep, txbuf, 100, NULL, ft_peer, &c0), "fi_send(ep2)");
		FT_POST(fi_sendmsg(ep2.ep, &m1, 0), "fi_sendmsg(ep2, 0)");
		FT_POST(fi_sendmsg(ep2.ep, &m2, FI_COMPLETION), "fi_sendmsg(ep2, FI_COMPLETION)");
		if (xf_cq_get(ep2.txcq, &e, "selective send")) {
			FT_CHECK(e.op_context == &c2, "selective: the completion is for %s, want the FI_COMPLETION send",
				 e.op_context == &c0 ? "fi_send" : e.op_context == &c1 ? "fi_sendmsg(0)" : "unknown");
			check_flags(e.flags, MSGF, "selective send");
		}
		xf_tsync(); /* the server has all three */
		FT_CHECK(xf_cq_quiet(ep2.txcq, NULL, 0.2),
			 "selective: a send without FI_COMPLETION produced a completion");
	} else {
		static char r[3][100];
		for (int i = 0; i < 3; i++)
			FT_POST(fi_recv(ft_ep, r[i], 100, NULL, peer2, r[i]), "fi_recv(ep2)");
		xf_tsync();
		for (int i = 0; i < 3; i++)
			xf_cq_get(ft_rxcq, &e, "receive from ep2");
		for (int i = 0; i < 3; i++)
			FT_CHECK(xf_verify_at(r[i], 100, 0x800 + i) < 0, "selective: message %d payload", i);
		xf_tsync();
	}
	xf_tsync();
	ft_log("selective: done");
}

/* ---- compflags ---- */

static void phase_compflags(void)
{
	static const uint64_t fl[3] = { FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE };
	static const char *const names[3] = { "FI_INJECT_COMPLETE", "FI_TRANSMIT_COMPLETE", "FI_DELIVERY_COMPLETE" };
	static const size_t sz[3] = { 100, 5000, 300000 };
	struct fi_cq_tagged_entry e;
	if (ft_is_client()) {
		xf_tsync();
		for (int i = 0; i < 3; i++) {
			char *p = txbuf + (size_t) i * 400000;
			struct iovec iov = { p, sz[i] };
			struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .context = p };
			int rc;
			xf_fill_at(p, sz[i], 0x900 + (size_t) i);
			rc = (int) fi_sendmsg(ft_ep, &m, FI_COMPLETION | fl[i]);
			FT_CHECK(rc == 0, "fi_sendmsg(%s) = %d (%s)", names[i], rc, fi_strerror(-rc));
			if (rc)
				continue;
			if (xf_cq_get(ft_txcq, &e, names[i])) {
				FT_CHECK(e.op_context == p, "%s: op_context %p", names[i], e.op_context);
				check_flags(e.flags, MSGF, names[i]);
			}
			/* The buffer is the application's again. */
			memset(p, 0, sz[i]);
		}
	} else {
		char *r = malloc(3 * 400000);
		if (!r)
			ft_die("malloc");
		for (int i = 0; i < 3; i++)
			FT_POST(fi_recv(ft_ep, r + i * 400000, 400000, NULL, ft_peer, r + i * 400000), "fi_recv");
		xf_tsync();
		for (int i = 0; i < 3; i++) {
			if (!xf_cq_get(ft_rxcq, &e, "receive"))
				continue;
			FT_CHECK(e.op_context == r + i * 400000, "receive %d: op_context", i);
			FT_CHECK(e.len == sz[i], "%s message: len %zu", names[i], e.len);
			FT_CHECK(xf_verify_at(r + i * 400000, sz[i], 0x900 + (size_t) i) < 0, "%s message: payload", names[i]);
		}
		free(r);
	}
	xf_tsync();
	ft_log("compflags: done");
}

/* ---- cancel ---- */

static void phase_cancel(void)
{
	static struct fi_context cx, cy, cz, cw;
	static char bx[64], by[64], bz[64], bw[64];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int seen_x = 0, seen_y = 0;
	FT_POST(fi_trecv(ft_ep, bx, sizeof(bx), NULL, ft_peer, 0xdead, 0, &cx), "fi_trecv(to cancel)");
	FT_POST(fi_recv(ft_ep, by, sizeof(by), NULL, ft_peer, &cy), "fi_recv(to cancel)");
	FT_RC(fi_cancel(&ft_ep->fid, &cx), 0);
	FT_RC(fi_cancel(&ft_ep->fid, &cy), 0);
	for (int i = 0; i < 2; i++) {
		int n = ft_cq_wait(ft_rxcq, &e, &err, NULL);
		FT_CHECK(n == -FI_ECANCELED, "canceled receive: completion %d (%s), want error FI_ECANCELED", n,
			 n < 0 ? fi_strerror(-n) : "success");
		if (n < 0) {
			seen_x += err.op_context == &cx;
			seen_y += err.op_context == &cy;
			FT_CHECK(err.op_context == &cx || err.op_context == &cy, "canceled receive: op_context %p",
				 err.op_context);
			FT_CHECK(err.flags & FI_RECV, "canceled receive: flags %#llx lack FI_RECV",
				 (unsigned long long) err.flags);
		}
	}
	FT_CHECK(seen_x == 1 && seen_y == 1, "cancel: tagged canceled %d times, untagged %d times", seen_x, seen_y);
	FT_CHECK(xf_cq_quiet(ft_rxcq, ft_txcq, 0.1), "cancel: an extra receive completion");
	/* The canceled receives are gone: new ones take the next messages. */
	FT_POST(fi_trecv(ft_ep, bz, sizeof(bz), NULL, ft_peer, 0xdead, 0, &cz), "fi_trecv");
	FT_POST(fi_recv(ft_ep, bw, sizeof(bw), NULL, ft_peer, &cw), "fi_recv");
	xf_tsync();
	xf_fill_at(txbuf, 64, 0xdead);
	FT_POST(fi_tsend(ft_ep, txbuf, 64, NULL, ft_peer, 0xdead, NULL), "fi_tsend");
	FT_POST(fi_send(ft_ep, txbuf, 64, NULL, ft_peer, NULL), "fi_send");
	for (int i = 0; i < 2; i++)
		xf_cq_get(ft_txcq, &e, "send after cancel");
	for (int i = 0; i < 2; i++)
		if (xf_cq_get(ft_rxcq, &e, "receive after cancel"))
			FT_CHECK(e.op_context == &cz || e.op_context == &cw, "receive after cancel: op_context %p%s",
				 e.op_context, e.op_context == &cx || e.op_context == &cy ? " (a canceled receive)" : "");
	FT_CHECK(xf_verify_at(bz, 64, 0xdead) < 0 && xf_verify_at(bw, 64, 0xdead) < 0, "receive after cancel: payload");
	xf_tsync();
	ft_log("cancel: done");
}

/* ---- trunc ---- */

/* One round: the receives are posted before the messages are sent
 * (expected) or after they have arrived (unexpected). */
static void trunc_round(int unexpected)
{
	static const size_t sent[3] = { 1000, 1000, 1 << 20 }, posted[3] = { 600, 600, 65536 };
	const char *path = unexpected ? "unexpected" : "expected";
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	if (ft_is_client()) {
		xf_fill_at(txbuf, 1 << 20, 0x600);
		if (!unexpected)
			xf_tsync();
		FT_POST(fi_send(ft_ep, txbuf, sent[0], NULL, ft_peer, NULL), "fi_send");
		FT_POST(fi_tsend(ft_ep, txbuf, sent[1], NULL, ft_peer, 0x600, NULL), "fi_tsend");
		FT_POST(fi_send(ft_ep, txbuf, sent[2], NULL, ft_peer, NULL), "fi_send");
		if (unexpected)
			xf_tsync();
		for (int i = 0; i < 3; i++)
			xf_cq_get(ft_txcq, &e, "send of a message the receiver truncates");
	} else {
		const size_t guard = 64, stride = 65536 + guard;
		char *r = malloc(3 * stride);
		if (!r)
			ft_die("malloc");
		memset(r, 0xee, 3 * stride);
		if (unexpected)
			xf_tsync(); /* the three messages are here (FI_ORDER_SAS) */
		FT_POST(fi_recv(ft_ep, r, posted[0], NULL, ft_peer, r), "fi_recv");
		FT_POST(fi_trecv(ft_ep, r + stride, posted[1], NULL, ft_peer, 0x600, 0, r + stride), "fi_trecv");
		FT_POST(fi_recv(ft_ep, r + 2 * stride, posted[2], NULL, ft_peer, r + 2 * stride), "fi_recv");
		if (!unexpected)
			xf_tsync();
		for (int n = 0; n < 3; n++) {
			int rc = ft_cq_wait(ft_rxcq, &e, &err, NULL);
			FT_CHECK(rc == -FI_ETRUNC, "%s truncated receive: completion %d (%s), want FI_ETRUNC", path, rc,
				 rc < 0 ? fi_strerror(-rc) : "success");
			if (rc >= 0)
				continue;
			int i = (int) (((char *) err.op_context - r) / (long) stride);
			if (i < 0 || i > 2 || (char *) err.op_context != r + (size_t) i * stride) {
				FT_CHECK(0, "%s truncated receive: unknown op_context %p", path, err.op_context);
				continue;
			}
			char *b = r + (size_t) i * stride;
			FT_CHECK(err.olen == sent[i] - posted[i], "%s truncation %d (%zu into %zu): olen %zu, want %zu",
				 path, i, sent[i], posted[i], err.olen, sent[i] - posted[i]);
			FT_CHECK(err.flags & FI_RECV, "%s truncation %d: flags %#llx lack FI_RECV", path, i,
				 (unsigned long long) err.flags);
			if (i == 1)
				FT_CHECK(err.tag == 0x600, "%s truncation: tag %#llx", path, (unsigned long long) err.tag);
			FT_CHECK(xf_verify_at(b, posted[i], 0x600) < 0, "%s truncation %d: the bytes that fit are wrong",
				 path, i);
			int clean = 1;
			for (size_t j = posted[i]; j < posted[i] + guard; j++)
				clean &= (unsigned char) b[j] == 0xee;
			FT_CHECK(clean, "%s truncation %d: bytes written past the %zu-byte buffer", path, i, posted[i]);
			ft_log("trunc %s %d: len %zu olen %zu", path, i, err.len, err.olen);
		}
		free(r);
	}
	xf_tsync(); /* the connection still carries traffic */
}

static void phase_trunc(void)
{
	trunc_round(0);
	trunc_round(1);
	ft_log("trunc: done");
}

/* ---- eagain ---- */

#define EAGAIN_MSG 4096
static void phase_eagain(void)
{
	size_t limit = 4 * ft_info->tx_attr->size + 64;
	struct fi_cq_tagged_entry e;
	uint64_t count = 0;
	char *pat = malloc(EAGAIN_MSG + 8 * (limit + 1));
	if (!pat)
		ft_die("malloc");
	if (ft_is_client()) {
		size_t k;
		int rc = 0;
		xf_fill_at(pat, EAGAIN_MSG + 8 * (limit + 1), 0);
		xf_tsync();
		for (k = 0; k < limit; k++) {
			rc = (int) fi_tsend(ft_ep, pat + 8 * k, EAGAIN_MSG, NULL, ft_peer, 0x900, NULL);
			if (rc)
				break;
		}
		FT_CHECK(rc == -FI_EAGAIN, "eagain: %zu sends accepted without reading the CQ and no -FI_EAGAIN "
			 "(tx_attr->size %zu)%s%s", k, ft_info->tx_attr->size, rc ? ", then " : "",
			 rc ? fi_strerror(-rc) : "");
		ft_log("eagain: -FI_EAGAIN after %zu sends (tx_attr->size %zu)", k, ft_info->tx_attr->size);
		/* Tell the server how many to expect, over the other endpoint. */
		count = k;
		{
			struct iovec iov = { &count, sizeof(count) };
			struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .tag = 0x901 };
			FT_POST(fi_tsendmsg(ep2.ep, &m, FI_COMPLETION), "fi_tsendmsg(count)");
			xf_cq_get(ep2.txcq, &e, "count send");
		}
		for (size_t i = 0; i < k; i++)
			if (!xf_cq_get(ft_txcq, &e, "eagain: completion of a queued send"))
				break;
		FT_CHECK(xf_cq_quiet(ft_txcq, NULL, 0.05), "eagain: more send completions than sends");
		rc = (int) fi_tsend(ft_ep, pat + 8 * k, EAGAIN_MSG, NULL, ft_peer, 0x900, NULL);
		FT_CHECK(rc == 0, "eagain: after draining, fi_tsend = %d (%s)", rc, fi_strerror(-rc));
		if (rc == 0)
			xf_cq_get(ft_txcq, &e, "eagain: send after draining");
	} else {
		enum { W = 64 };
		char *r = malloc((size_t) W * EAGAIN_MSG);
		size_t next = 0, done = 0, total;
		int bad = 0;
		if (!r)
			ft_die("malloc");
		FT_POST(fi_trecv(ft_ep, &count, sizeof(count), NULL, peer2, 0x901, 0, &count), "fi_trecv(count)");
		xf_tsync();
		if (!xf_cq_get(ft_rxcq, &e, "eagain: count from the client's second endpoint"))
			ft_die("no count");
		total = (size_t) count + 1;
		FT_CHECK(count <= limit, "eagain: count %llu", (unsigned long long) count);
		/* Receive in order with W receives posted; slot = index % W. */
		while (done < total) {
			while (next < total && next - done < W) {
				char *b = r + (next % W) * EAGAIN_MSG;
				FT_POST(fi_trecv(ft_ep, b, EAGAIN_MSG, NULL, ft_peer, 0x900, 0, (void *) (uintptr_t) next),
					"fi_trecv(flood)");
				next++;
			}
			if (!xf_cq_get(ft_rxcq, &e, "eagain: flood receive"))
				break;
			size_t i = (size_t) (uintptr_t) e.op_context;
			if (bad < 3 && (e.len != EAGAIN_MSG || xf_verify_at(r + (i % W) * EAGAIN_MSG, EAGAIN_MSG, 8 * i) >= 0)) {
				bad++;
				FT_CHECK(0, "eagain: receive %zu: len %zu or payload wrong", i, e.len);
			}
			done++;
		}
		ft_log("eagain: received %zu messages", done);
		free(r);
	}
	free(pat);
	xf_tsync();
}

static char skip[256];
static void opt(int c, const char *arg)
{
	if (c == 'x')
		snprintf(skip + strlen(skip), sizeof(skip) - strlen(skip), ",%s,", arg);
}

#define PHASE(name) \
	do { \
		if (!strstr(skip, "," #name ",")) \
			phase_##name(); \
	} while (0)

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_opts.size = 64 << 20;
	ft_args(argc, argv, "x:", opt);
	hints = ft_hints(FI_MSG | FI_TAGGED | FI_DIRECTED_RECV);
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	ft_setup(hints);
	FT_CHECK(ft_info->tx_attr->msg_order & FI_ORDER_SAS, "tx msg_order lacks FI_ORDER_SAS");
	FT_CHECK(ft_info->caps & FI_DIRECTED_RECV, "caps lack FI_DIRECTED_RECV");
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_init_ep();
	bufsize = ft_opts.size > (2 << 20) ? ft_opts.size + 64 : (2 << 20);
	txbuf = malloc(bufsize);
	rxbuf = malloc(bufsize);
	if (!txbuf || !rxbuf)
		ft_die("malloc");
	setup_ep2();
	PHASE(sizes);
	PHASE(match);
	PHASE(directed);
	PHASE(sas);
	PHASE(selective);
	PHASE(compflags);
	PHASE(cancel);
	PHASE(trunc);
	PHASE(eagain);
	free(txbuf);
	free(rxbuf);
	xf_close_ep(&ep2);
	return ft_finish("fi_rdm");
}
