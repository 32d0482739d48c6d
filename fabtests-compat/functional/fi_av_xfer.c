/*
 * fi_av_xfer: address vectors while traffic flows, with FI_AV_TABLE (-A
 * table, default) or FI_AV_MAP (-A map), on an RDM or DGRAM endpoint with
 * FI_SOURCE.
 *  lookup     fi_av_lookup returns the address inserted (the client's name
 *             at the server, the server's address at the client), and with
 *             a short buffer truncates and reports the full length;
 *             fi_av_straddr prints it with its IP address and port
 *  source     fi_cq_readfrom gives the sender's fi_addr, both ways
 *  unknown    a message from an endpoint not in the AV (the client's second
 *             endpoint) reports FI_ADDR_NOTAVAIL (FI_AV_MAP may map it
 *             algorithmically, but never to another peer's fi_addr); once
 *             inserted, the same endpoint resolves to its fi_addr
 *  remove     the server removes the client and inserts another address
 *             (127.0.0.1:9, never used; with FI_ADDR_STR addresses, its
 *             own name): a message from the removed client
 *             reports FI_ADDR_NOTAVAIL ("source addresses which cannot be
 *             mapped to a usable fi_addr_t", fi_cq(3)), and above all not
 *             the other address's fi_addr; it inserts the client again and
 *             uses the fi_addr that returns, both ways (readfrom reports
 *             the new one); then the client does the same with the
 *             server's address
 *
 * Run: -e rdm | -e dgram, [-A table|map]. DGRAM drops a message that
 * finds no receive posted, so there every tagged receive (names, messages,
 * syncs; any source) is posted ahead, two deep per tag, before the address
 * exchange, and posted again as soon as it completes, before this side
 * sends anything more; each message then finds its receive. (A datagram
 * lost on loopback fails the run.)
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "xfer.h"
#include <netinet/in.h>
#include <arpa/inet.h>

#define TAG_NAME 0x4e4e
#define TAG_CTL 0x4e4f

static enum fi_av_type av_type = FI_AV_TABLE;
static struct xf_ep ep2; /* client: an endpoint the server does not know at first */
static char name1[128], name2[128]; /* server: the client's endpoints' names */
static size_t len1, len2;
static int dgram; /* -e dgram: receives posted ahead (arm_*) */

/* DGRAM: the receives posted ahead for one tag on one endpoint. Completed
 * ones are kept until asked for, in posting order. */
#define ARM_DEPTH 2
struct arm {
	struct fid_ep *ep;
	struct fid_cq *rxcq;
	uint64_t tag;
	char buf[ARM_DEPTH][128];
	int done[ARM_DEPTH];
	size_t len[ARM_DEPTH];
	fi_addr_t src[ARM_DEPTH];
	unsigned next;
};
static struct arm arms[6];
static unsigned narm;

static void arm_post(struct arm *a, unsigned k)
{
	a->done[k] = 0;
	FT_POST(fi_trecv(a->ep, a->buf[k], sizeof(a->buf[k]), NULL, FI_ADDR_UNSPEC, a->tag, 0, a->buf[k]),
		"fi_trecv(posted ahead)");
}

static struct arm *arm_open(struct fid_ep *ep, struct fid_cq *rxcq, uint64_t tag)
{
	struct arm *a = &arms[narm++];
	a->ep = ep, a->rxcq = rxcq, a->tag = tag;
	for (unsigned k = 0; k < ARM_DEPTH; k++)
		arm_post(a, k);
	return a;
}

static struct arm *arm_of(struct fid_ep *ep, uint64_t tag)
{
	for (unsigned i = 0; i < narm; i++)
		if (arms[i].ep == ep && arms[i].tag == tag)
			return &arms[i];
	ft_die("no receive posted ahead for tag %#llx", (unsigned long long) tag);
	return NULL;
}

/* Waits (bounded) for the next message of `a`'s tag, copies it to `out`
 * (128 bytes), and posts its receive again. Completions of the other tags
 * on the same CQ are kept for their turn. Returns the length or -1 on an
 * error completion. */
static long arm_wait(struct arm *a, void *out, fi_addr_t *src)
{
	double end = ft_now() + FT_TIMEOUT;
	unsigned k = a->next;
	long len;
	while (!a->done[k]) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		fi_addr_t from = FI_ADDR_NOTAVAIL;
		int n = ft_cq_poll(a->rxcq, &e, &err, &from);
		if (n < 0) {
			FT_CHECK(0, "receive (tag %#llx) error completion %s", (unsigned long long) a->tag,
				 fi_strerror(err.err));
			return -1;
		}
		for (unsigned i = 0; n && i < narm; i++)
			for (unsigned j = 0; j < ARM_DEPTH; j++)
				if (e.op_context == arms[i].buf[j])
					arms[i].done[j] = 1, arms[i].len[j] = e.len, arms[i].src[j] = from;
		if (ft_now() > end)
			ft_die("no message with tag %#llx within %.0f s", (unsigned long long) a->tag, FT_TIMEOUT);
	}
	memcpy(out, a->buf[k], a->len[k]);
	len = (long) a->len[k];
	if (src)
		*src = a->src[k];
	a->next = (k + 1) % ARM_DEPTH;
	arm_post(a, k);
	return len;
}

/* Synchronisation point: xf_tsync, or on DGRAM a sync message each way
 * into the receives posted ahead. */
static void sync_point(void)
{
	struct fi_cq_tagged_entry e;
	char b[128];
	if (!dgram) {
		xf_tsync();
		return;
	}
	FT_POST(fi_tsend(ft_ep, NULL, 0, NULL, ft_peer, XF_SYNC_TAG, NULL), "fi_tsend(sync)");
	ft_cq_ok(ft_txcq, &e, "tagged sync send");
	arm_wait(arm_of(ft_ep, XF_SYNC_TAG), b, NULL);
}

static void opt(int c, const char *arg)
{
	if (c == 'A')
		av_type = !strcmp(arg, "map") ? FI_AV_MAP : FI_AV_TABLE;
}

/* ft_open_cqs with the AV type of -A. */
static void open_cqs(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE, .size = 1024 };
	struct fi_av_attr aa = { .type = av_type };
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, NULL)))
		ft_die("fi_cq_open: %s", fi_strerror(-rc));
	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open(%s): %s", av_type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE", fi_strerror(-rc));
}

/* Checks that fi_av_lookup(addr) returns `want` (`len` bytes). */
static void check_lookup(fi_addr_t addr, const void *want, size_t len, const char *what)
{
	char got[128], s[128];
	size_t glen = sizeof(got), slen = sizeof(s), tlen = 4;
	int rc = fi_av_lookup(ft_av, addr, got, &glen);
	FT_CHECK(rc == 0, "%s: fi_av_lookup = %d (%s)", what, rc, fi_strerror(-rc));
	if (rc)
		return;
	FT_CHECK(glen == len, "%s: fi_av_lookup addrlen %zu, want %zu", what, glen, len);
	FT_CHECK(!memcmp(got, want, len < glen ? len : glen), "%s: fi_av_lookup returned another address", what);
	/* Short buffer: truncated, addrlen set to what is needed. */
	memset(got, 0, sizeof(got));
	rc = fi_av_lookup(ft_av, addr, got, &tlen);
	FT_CHECK(rc == 0 || rc == -FI_ETOOSMALL, "%s: fi_av_lookup into 4 bytes = %d", what, rc);
	FT_CHECK(tlen == len, "%s: fi_av_lookup into 4 bytes: addrlen %zu, want %zu", what, tlen, len);
	FT_CHECK(!memcmp(got, want, 4) && got[4] == 0, "%s: fi_av_lookup into 4 bytes: not the first 4 bytes", what);
	/* fi_av_straddr names the IP address and port. */
	if (!fi_av_straddr(ft_av, want, s, &slen)) {
		FT_CHECK(0, "%s: fi_av_straddr returned NULL", what);
		return;
	}
	if (((const struct sockaddr *) want)->sa_family == AF_INET) {
		const struct sockaddr_in *sin = want;
		char port[16], ip[INET_ADDRSTRLEN];
		snprintf(port, sizeof(port), "%u", ntohs(sin->sin_port));
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		FT_CHECK(strstr(s, ip) && strstr(s, port), "%s: fi_av_straddr \"%s\" lacks %s or port %s", what, s, ip,
			 port);
	}
	FT_CHECK(slen == strlen(s) + 1, "%s: fi_av_straddr len %zu for \"%s\"", what, slen, s);
	ft_log("%s: %s", what, s);
}

/* Sends a tagged message `seq` from `ep` to `dest` and waits for its
 * completion on `txcq`. */
static void send_seq(struct fid_ep *ep, struct fid_cq *txcq, fi_addr_t dest, uint64_t tag, unsigned seq)
{
	static char b[64];
	struct fi_cq_tagged_entry e;
	xf_fill_at(b, sizeof(b), seq);
	FT_POST(fi_tsend(ep, b, sizeof(b), NULL, dest, tag, NULL), "fi_tsend");
	xf_cq_get(txcq, &e, "send");
}

/* Receives tagged message `seq` from anyone; returns its source. */
static fi_addr_t recv_seq(struct fid_ep *ep, struct fid_cq *rxcq, uint64_t tag, unsigned seq, const char *what)
{
	static char b[64];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = 0x5a5a;
	memset(b, 0, sizeof(b));
	if (dgram) {
		if (arm_wait(arm_of(ep, tag), b, &src) < 0)
			return FI_ADDR_NOTAVAIL - 1;
		FT_CHECK(xf_verify_at(b, sizeof(b), seq) < 0, "%s: payload is not message %u's", what, seq);
		return src;
	}
	FT_POST(fi_trecv(ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, tag, 0, b), "fi_trecv");
	int n = ft_cq_wait(rxcq, &e, &err, &src);
	FT_CHECK(n == 1, "%s: %s", what, n < 0 ? fi_strerror(-n) : "ok");
	if (n != 1)
		return FI_ADDR_NOTAVAIL - 1;
	FT_CHECK(xf_verify_at(b, sizeof(b), seq) < 0, "%s: payload is not message %u's", what, seq);
	return src;
}

/* An fi_addr from a peer that is not in the AV. */
static void check_unknown(fi_addr_t src, const char *what)
{
	if (av_type == FI_AV_TABLE)
		FT_CHECK(src == FI_ADDR_NOTAVAIL, "%s: source %#llx, want FI_ADDR_NOTAVAIL", what,
			 (unsigned long long) src);
	else
		FT_CHECK(src != ft_peer, "%s: source is the other peer's fi_addr %#llx", what, (unsigned long long) src);
	ft_log("%s: source %#llx", what, (unsigned long long) src);
}

static void client(void)
{
	char name[128];
	size_t len = sizeof(name);
	fi_addr_t src, old;
	int rc;
	xf_open_ep(&ep2, ft_info, ft_av, FI_CQ_FORMAT_TAGGED, 0);
	if (dgram)
		arm_open(ep2.ep, ep2.rxcq, TAG_CTL);

	/* lookup */
	check_lookup(ft_peer, ft_info->dest_addr, ft_info->dest_addrlen, "client: the server's address");
	if ((rc = fi_getname(&ft_ep->fid, name, &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	FT_POST(fi_tsend(ft_ep, name, len, NULL, ft_peer, TAG_NAME, NULL), "fi_tsend(name)");
	{
		struct fi_cq_tagged_entry e;
		xf_cq_get(ft_txcq, &e, "send of the name");
	}
	sync_point();

	/* source */
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 1);
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 2, "client: reply");
	FT_CHECK(src == ft_peer, "client: reply source %#llx, want the server's fi_addr %#llx",
		 (unsigned long long) src, (unsigned long long) ft_peer);
	sync_point();

	/* unknown: ep2 sends before and after the server inserts it. */
	send_seq(ep2.ep, ep2.txcq, ft_peer, TAG_CTL, 3);
	sync_point();
	len = sizeof(name);
	if ((rc = fi_getname(&ep2.ep->fid, name, &len)))
		ft_die("fi_getname(ep2): %s", fi_strerror(-rc));
	FT_POST(fi_tsend(ft_ep, name, len, NULL, ft_peer, TAG_NAME, NULL), "fi_tsend(ep2 name)");
	{
		struct fi_cq_tagged_entry e;
		xf_cq_get(ft_txcq, &e, "send of ep2's name");
	}
	sync_point();
	send_seq(ep2.ep, ep2.txcq, ft_peer, TAG_CTL, 4);
	sync_point();

	/* remove (server side): the server tells ep2 once ep1 is removed. */
	recv_seq(ep2.ep, ep2.rxcq, TAG_CTL, 5, "client: ep2 told of the removal");
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 6);
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 7, "client: message after the server's re-insert");
	FT_CHECK(src == ft_peer, "client: source %#llx after the server's re-insert", (unsigned long long) src);
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 8);
	sync_point();

	/* remove (client side) */
	old = ft_peer;
	FT_RC(fi_av_remove(ft_av, &old, 1, 0), 0);
	FT_RC(fi_av_insert(ft_av, ft_info->dest_addr, 1, &ft_peer, 0, NULL), 1);
	FT_CHECK(ft_peer != FI_ADDR_NOTAVAIL, "re-insert of the server gave FI_ADDR_NOTAVAIL");
	ft_log("client: server re-inserted: fi_addr %#llx (was %#llx)", (unsigned long long) ft_peer,
	       (unsigned long long) old);
	check_lookup(ft_peer, ft_info->dest_addr, ft_info->dest_addrlen, "client: the server's re-inserted address");
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 9);
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 10, "client: reply after re-insert");
	FT_CHECK(src == ft_peer, "client: reply source %#llx, want the re-inserted fi_addr %#llx",
		 (unsigned long long) src, (unsigned long long) ft_peer);
	sync_point();
}

static void recv_name(char *name, size_t *len)
{
	struct fi_cq_tagged_entry e;
	if (dgram) {
		long n = arm_wait(arm_of(ft_ep, TAG_NAME), name, NULL);
		if (n >= 0)
			*len = (size_t) n;
		return;
	}
	FT_POST(fi_trecv(ft_ep, name, 128, NULL, FI_ADDR_UNSPEC, TAG_NAME, 0, NULL), "fi_trecv(name)");
	if (xf_cq_get(ft_rxcq, &e, "receive of a name"))
		*len = e.len;
}

static void server(void)
{
	fi_addr_t src, peer2 = FI_ADDR_UNSPEC, old, other_addr = FI_ADDR_NOTAVAIL;

	/* lookup */
	recv_name(name1, &len1);
	check_lookup(ft_peer, name1, len1, "server: the client's address");
	sync_point();

	/* source */
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 1, "server: message from the client");
	FT_CHECK(src == ft_peer, "server: source %#llx, want the client's fi_addr %#llx", (unsigned long long) src,
		 (unsigned long long) ft_peer);
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 2);
	sync_point();

	/* unknown */
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 3, "server: message from an endpoint not in the AV");
	check_unknown(src, "server: endpoint not in the AV");
	sync_point();
	recv_name(name2, &len2);
	FT_RC(fi_av_insert(ft_av, name2, 1, &peer2, 0, NULL), 1);
	sync_point();
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 4, "server: message from the inserted second endpoint");
	FT_CHECK(src == peer2, "server: source %#llx, want the second endpoint's new fi_addr %#llx",
		 (unsigned long long) src, (unsigned long long) peer2);
	sync_point();

	/* remove; then another address takes the freed entry (where the
	 * AV reuses it), which a message from the removed client must not
	 * be attributed to. */
	old = ft_peer;
	FT_RC(fi_av_remove(ft_av, &old, 1, 0), 0);
	if (ft_info->addr_format == FI_ADDR_STR) {
		/* String addresses (shm): this endpoint's own name is an
		 * address the client's messages cannot come from. */
		char own[256];
		size_t olen = sizeof(own);
		FT_RC(fi_getname(&ft_ep->fid, own, &olen), 0);
		FT_RC(fi_av_insert(ft_av, own, 1, &other_addr, 0, NULL), 1);
		ft_log("server: client removed (fi_addr %#llx); own name %s inserted as %#llx", (unsigned long long) old,
		       own, (unsigned long long) other_addr);
	} else {
		struct sockaddr_in other = { .sin_family = AF_INET, .sin_port = htons(9) };
		other.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		FT_RC(fi_av_insert(ft_av, &other, 1, &other_addr, 0, NULL), 1);
		ft_log("server: client removed (fi_addr %#llx); 127.0.0.1:9 inserted as %#llx", (unsigned long long) old,
		       (unsigned long long) other_addr);
	}
	send_seq(ft_ep, ft_txcq, peer2, TAG_CTL, 5);
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 6, "server: message from the removed client");
	FT_CHECK(src != other_addr, "server: a message from the removed client reports the fi_addr %#llx of the "
		 "address inserted after the removal", (unsigned long long) src);
	check_unknown(src, "server: removed client");
	FT_RC(fi_av_insert(ft_av, name1, 1, &ft_peer, 0, NULL), 1);
	FT_CHECK(ft_peer != FI_ADDR_NOTAVAIL, "re-insert of the client gave FI_ADDR_NOTAVAIL");
	ft_log("server: client re-inserted: fi_addr %#llx (was %#llx)", (unsigned long long) ft_peer,
	       (unsigned long long) old);
	check_lookup(ft_peer, name1, len1, "server: the client's re-inserted address");
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 7);
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 8, "server: message after re-insert");
	FT_CHECK(src == ft_peer, "server: source %#llx, want the re-inserted fi_addr %#llx", (unsigned long long) src,
		 (unsigned long long) ft_peer);
	sync_point();

	/* the client removes and re-inserts us */
	src = recv_seq(ft_ep, ft_rxcq, TAG_CTL, 9, "server: message after the client's re-insert");
	FT_CHECK(src == ft_peer, "server: source %#llx after the client's re-insert", (unsigned long long) src);
	send_seq(ft_ep, ft_txcq, ft_peer, TAG_CTL, 10);
	sync_point();
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, "A:", opt);
	hints = ft_hints(FI_MSG | FI_TAGGED | FI_SOURCE);
	hints->domain_attr->av_type = av_type;
	ft_require(hints, "FI_TAGGED with FI_SOURCE on this endpoint type");
	ft_setup(hints);
	open_cqs();
	dgram = ft_ep_type == FI_EP_DGRAM;
	if (dgram) {
		/* Receives posted before the peer can send (see the top). */
		ft_open_ep(ft_info);
		arm_open(ft_ep, ft_rxcq, TAG_CTL);
		arm_open(ft_ep, ft_rxcq, XF_SYNC_TAG);
		if (!ft_is_client())
			arm_open(ft_ep, ft_rxcq, TAG_NAME);
		ft_exchange_addresses();
	} else {
		ft_init_ep();
	}
	if (ft_is_client())
		client();
	else
		server();
	xf_close_ep(&ep2);
	return ft_finish("fi_av_xfer");
}
