/*
 * fi_cq_data: remote CQ data (domain cq_data_size at least 4, as
 * upstream's fabtests ask). The client sends
 * with fi_senddata, fi_tsenddata, fi_injectdata, fi_tinjectdata and
 * fi_sendmsg/fi_tsendmsg with FI_REMOTE_CQ_DATA; the server's receive
 * completions must carry FI_REMOTE_CQ_DATA and every bit of the data the
 * domain's cq_data_size holds (0 and ~0 included: values are masked to
 * cq_data_size bytes before they are sent, as upstream's fabtests do). Plain fi_send/fi_tsend/fi_inject and an fi_sendmsg
 * whose msg.data is set but whose flags lack FI_REMOTE_CQ_DATA must not set
 * the flag. Sends complete with FI_SEND and without FI_REMOTE_CQ_DATA;
 * injects produce no send completion.
 *
 * Run: -e msg | -e rdm | -e dgram, [-F data|tagged] (the CQ format,
 * default tagged; with data, tags are not checked). Tagged cases are
 * skipped when the provider's endpoint lacks FI_TAGGED, and cases longer
 * than the endpoint's max_msg_size are skipped (each is named).
 *
 * DGRAM drops what arrives before a receive is posted, and a lost message
 * cannot be asked for: there the server posts every receive first, then
 * repeats a READY datagram (every 100 ms) until the first case arrives;
 * the client sends once it has a READY. The closing sync is left out
 * (its two messages could cross unposted receives).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"

enum kind { SENDDATA, TSENDDATA, INJECTDATA, TINJECTDATA, SEND, TSEND, INJECT, SENDMSG, TSENDMSG, SENDMSG_NOFLAG };
static const char *const kind_name[] = { "fi_senddata", "fi_tsenddata", "fi_injectdata", "fi_tinjectdata",
					 "fi_send", "fi_tsend", "fi_inject", "fi_sendmsg(FI_REMOTE_CQ_DATA)",
					 "fi_tsendmsg(FI_REMOTE_CQ_DATA)", "fi_sendmsg(data, no FI_REMOTE_CQ_DATA)" };

static const struct {
	enum kind kind;
	size_t len;
	uint64_t data;
} cases[] = {
	{ SENDDATA, 32, 0x0123456789abcdefULL },
	{ TSENDDATA, 32, 0xfedcba9876543210ULL },
	{ INJECTDATA, 32, 0x8000000000000001ULL },
	{ TINJECTDATA, 32, 0x7fffffffffffffffULL },
	{ SEND, 32, 0 },
	{ TSEND, 32, 0 },
	{ INJECT, 32, 0 },
	{ SENDMSG, 32, 0xa5a5a5a5a5a5a5a5ULL },
	{ TSENDMSG, 32, 0x5a5a5a5a00000000ULL },
	{ SENDMSG_NOFLAG, 32, 0x1111111111111111ULL },
	{ SENDDATA, 0, 0 },                      /* zero data still flagged */
	{ TSENDDATA, 0, ~0ULL },
	{ SENDDATA, 100000, 0xbeefULL << 32 },   /* beyond any eager limit */
	{ TSENDDATA, 100000, 0xfeedULL },
};
#define NCASE (sizeof(cases) / sizeof(cases[0]))

static int tagged_ok = 1;
static enum fi_cq_format format = FI_CQ_FORMAT_TAGGED;

static int is_tagged(enum kind k)
{
	return k == TSENDDATA || k == TINJECTDATA || k == TSEND || k == TSENDMSG;
}
static int has_data(enum kind k)
{
	return k == SENDDATA || k == TSENDDATA || k == INJECTDATA || k == TINJECTDATA || k == SENDMSG || k == TSENDMSG;
}
static int is_inject(enum kind k)
{
	return k == INJECTDATA || k == TINJECTDATA || k == INJECT;
}
static uint64_t tag_of(unsigned i)
{
	return 0x7000 + i;
}

/* Whether case i runs here (tagged support, max_msg_size); `say` names a
 * skipped case once. */
static int runs(unsigned i, int say)
{
	if (is_tagged(cases[i].kind) && !tagged_ok)
		return 0;
	if (cases[i].len <= ft_info->ep_attr->max_msg_size)
		return 1;
	if (say)
		printf("case %u %s (%zu bytes): skipped, beyond max_msg_size %zu\n", i, kind_name[cases[i].kind],
		       cases[i].len, ft_info->ep_attr->max_msg_size);
	return 0;
}

/* DGRAM server, receives posted: sends READY every 100 ms until the first
 * receive completion (left in `entry`, *got set) or error entry (left in
 * the CQ) shows the client has started. */
static void dgram_ready(void *entry, int *got)
{
	double end = ft_now() + FT_TIMEOUT;
	char e[64];
	while (ft_now() < end) {
		double next = ft_now() + 0.1;
		FT_POST(fi_send(ft_ep, "READY", 6, NULL, ft_peer, NULL), "fi_send(READY)");
		ft_cq_ok(ft_txcq, e, "send of READY");
		while (ft_now() < next) {
			ssize_t n = fi_cq_read(ft_rxcq, entry, 1);
			*got = n == 1;
			if (n == 1 || n == -FI_EAVAIL)
				return;
		}
	}
	ft_die("no case from the client within %.0f s of READY", FT_TIMEOUT);
}

/* DGRAM client: waits (bounded) for the server's READY. */
static void dgram_wait_ready(void)
{
	char b[16], e[64];
	FT_POST(fi_recv(ft_ep, b, sizeof(b), NULL, ft_peer, NULL), "fi_recv(READY)");
	ft_cq_ok(ft_rxcq, e, "receive of READY");
}


static void opt(int c, const char *arg)
{
	if (c == 'F')
		format = !strcmp(arg, "data") ? FI_CQ_FORMAT_DATA : FI_CQ_FORMAT_TAGGED;
}

static void client(void)
{
	static char tx[NCASE][100000];
	struct fi_cq_tagged_entry e;
	int want = 0, got = 0;
	if (ft_ep_type == FI_EP_DGRAM)
		dgram_wait_ready();
	for (unsigned i = 0; i < NCASE; i++) {
		enum kind k = cases[i].kind;
		size_t len = cases[i].len;
		uint64_t d = ft_cq_data(cases[i].data), t = tag_of(i);
		struct iovec iov = { tx[i], len };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .context = tx[i], .data = d };
		struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = ft_peer, .tag = t, .context = tx[i],
					    .data = d };
		if (!runs(i, 1))
			continue;
		xf_fill_at(tx[i], len, 0x100 * (size_t) i);
		switch (k) {
		case SENDDATA: FT_POST(fi_senddata(ft_ep, tx[i], len, NULL, d, ft_peer, tx[i]), kind_name[k]); break;
		case TSENDDATA: FT_POST(fi_tsenddata(ft_ep, tx[i], len, NULL, d, ft_peer, t, tx[i]), kind_name[k]); break;
		case INJECTDATA: FT_POST(fi_injectdata(ft_ep, tx[i], len, d, ft_peer), kind_name[k]); break;
		case TINJECTDATA: FT_POST(fi_tinjectdata(ft_ep, tx[i], len, d, ft_peer, t), kind_name[k]); break;
		case SEND: FT_POST(fi_send(ft_ep, tx[i], len, NULL, ft_peer, tx[i]), kind_name[k]); break;
		case TSEND: FT_POST(fi_tsend(ft_ep, tx[i], len, NULL, ft_peer, t, tx[i]), kind_name[k]); break;
		case INJECT: FT_POST(fi_inject(ft_ep, tx[i], len, ft_peer), kind_name[k]); break;
		case SENDMSG: FT_POST(fi_sendmsg(ft_ep, &m, FI_COMPLETION | FI_REMOTE_CQ_DATA), kind_name[k]); break;
		case TSENDMSG: FT_POST(fi_tsendmsg(ft_ep, &tm, FI_COMPLETION | FI_REMOTE_CQ_DATA), kind_name[k]); break;
		case SENDMSG_NOFLAG: FT_POST(fi_sendmsg(ft_ep, &m, FI_COMPLETION), kind_name[k]); break;
		}
		if (is_inject(k))
			memset(tx[i], 0, len); /* the data was copied by the call */
		else
			want++;
	}
	for (got = 0; got < want; got++) {
		if (!xf_cq_get(ft_txcq, &e, "send"))
			continue;
		int i = (int) (((char *) e.op_context - tx[0]) / (long) sizeof(tx[0]));
		if (i < 0 || i >= (int) NCASE || (char *) e.op_context != tx[i]) {
			FT_CHECK(0, "send completion with unknown op_context %p", e.op_context);
			continue;
		}
		FT_CHECK(!is_inject(cases[i].kind), "a send completion for %s", kind_name[cases[i].kind]);
		FT_CHECK((e.flags & (FI_SEND | FI_RECV | FI_REMOTE_CQ_DATA)) == FI_SEND, "%s: send completion flags %#llx",
			 kind_name[cases[i].kind], (unsigned long long) e.flags);
		FT_CHECK(e.flags & (is_tagged(cases[i].kind) ? FI_TAGGED : FI_MSG), "%s: send completion flags %#llx",
			 kind_name[cases[i].kind], (unsigned long long) e.flags);
	}
	if (ft_ep_type != FI_EP_DGRAM)
		ft_sync();
	FT_CHECK(xf_cq_quiet(ft_txcq, ft_rxcq, 0.05), "more send completions than non-inject sends");
}

static void server(void)
{
	static char rx[NCASE][100000];
	union {
		struct fi_cq_tagged_entry t;
		struct fi_cq_data_entry d;
	} e;
	int want = 0, stashed = 0;
	for (unsigned i = 0; i < NCASE; i++) {
		enum kind k = cases[i].kind;
		if (!runs(i, 0))
			continue;
		if (is_tagged(k))
			FT_POST(fi_trecv(ft_ep, rx[i], sizeof(rx[i]), NULL, ft_peer, tag_of(i), 0, rx[i]), "fi_trecv");
		else
			FT_POST(fi_recv(ft_ep, rx[i], sizeof(rx[i]), NULL, ft_peer, rx[i]), "fi_recv");
		want++;
	}
	if (ft_ep_type == FI_EP_DGRAM)
		dgram_ready(&e, &stashed);
	for (int n = 0; n < want; n++) {
		uint64_t flags, data, tag = 0;
		size_t len;
		void *ctx;
		if (stashed)
			stashed = 0;
		else if (!xf_cq_get(ft_rxcq, &e, "receive"))
			continue;
		if (format == FI_CQ_FORMAT_TAGGED) {
			flags = e.t.flags, data = e.t.data, tag = e.t.tag, len = e.t.len, ctx = e.t.op_context;
		} else {
			flags = e.d.flags, data = e.d.data, len = e.d.len, ctx = e.d.op_context;
		}
		int i = (int) (((char *) ctx - rx[0]) / (long) sizeof(rx[0]));
		if (i < 0 || i >= (int) NCASE || (char *) ctx != rx[i]) {
			FT_CHECK(0, "receive completion with unknown op_context %p", ctx);
			continue;
		}
		enum kind k = cases[i].kind;
		const char *what = kind_name[k];
		uint64_t want_flags = FI_RECV | (is_tagged(k) ? FI_TAGGED : FI_MSG) | (has_data(k) ? FI_REMOTE_CQ_DATA : 0);
		FT_CHECK((flags & XF_OPFLAGS) == want_flags, "case %d %s (%zu bytes): receive flags %#llx, want %#llx", i,
			 what, cases[i].len, (unsigned long long) (flags & XF_OPFLAGS), (unsigned long long) want_flags);
		if (has_data(k))
			FT_CHECK(data == ft_cq_data(cases[i].data), "case %d %s: data %#llx, want %#llx", i, what,
				 (unsigned long long) data, (unsigned long long) ft_cq_data(cases[i].data));
		FT_CHECK(len == cases[i].len, "case %d %s: len %zu, want %zu", i, what, len, cases[i].len);
		if (format == FI_CQ_FORMAT_TAGGED && is_tagged(k))
			FT_CHECK(tag == tag_of((unsigned) i), "case %d %s: tag %#llx", i, what, (unsigned long long) tag);
		FT_CHECK(xf_verify_at(rx[i], cases[i].len, 0x100 * (size_t) i) < 0, "case %d %s: payload", i, what);
	}
	if (ft_ep_type != FI_EP_DGRAM)
		ft_sync();
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, "F:", opt);
	hints = ft_hints(FI_MSG | FI_TAGGED);
	hints->domain_attr->cq_data_size = 4;
	/* Without FI_TAGGED on this endpoint type, test the message calls only. */
	tagged_ok = ft_probe_tagged(hints);
	ft_require(hints, "remote CQ data (cq_data_size 4) on this endpoint type");
	ft_setup(hints);
	FT_CHECK(ft_info->domain_attr->cq_data_size >= 4, "cq_data_size %zu, want at least 4",
		 ft_info->domain_attr->cq_data_size);
	ft_open_cqs(format);
	ft_init_ep();
	if (ft_is_client())
		client();
	else
		server();
	return ft_finish("fi_cq_data");
}
