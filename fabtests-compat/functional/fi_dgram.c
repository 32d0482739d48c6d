/*
 * fi_dgram: FI_EP_DGRAM semantics (fi_msg(3), fi_endpoint(3), fi_cq(3)):
 *
 *  - message boundaries: -I bursts of datagrams of different sizes
 *    (0 bytes among them) posted back to back arrive as separate
 *    completions, each with its own length and intact contents;
 *  - max_msg_size: a datagram of exactly max_msg_size arrives whole; one
 *    byte more fails, either at fi_send (a negative code other than
 *    -FI_EAGAIN) or as an error completion, and never reaches the peer;
 *  - FI_SOURCE: fi_cq_readfrom gives FI_ADDR_NOTAVAIL for a sender not in
 *    the AV and the sender's fi_addr once it is inserted, on both sides.
 *
 * UDP may lose datagrams, so the control messages (hello, query, bye) are
 * requests the client retransmits until the server's answer comes; the
 * server answers duplicates again. Each burst's datagrams are sent once
 * and the server reports which it got; up to MAX_LOST burst datagrams in
 * all may be missing (each is reported), more is a failure. The datagram
 * of max_msg_size is retried up to three times. Every datagram carries a
 * header (type, burst, sequence, length) so that a merged, split or
 * stale datagram is told apart from the expected one.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <stdint.h>

#define MAGIC 0x64677231u
#define MAX_LOST 2
#define BIG_BURST 0xfffe
#define OVER_BURST 0xfffd
#define CAP_SIZE 65536 /* largest datagram tried when max_msg_size is larger */
#define NRX 32

enum { HELLO = 1, ACK, DATA, QUERY, REPORT, BYE, BYEACK };

struct hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t burst;
	uint32_t seq;
	uint32_t len; /* the whole datagram's length, header included */
};

struct report {
	struct hdr h;
	uint64_t seen; /* bitmap of the burst's sequence numbers received */
	uint32_t zero; /* zero-length datagrams received since the last query */
	uint32_t bad; /* datagrams with a wrong length or contents, so far */
};

static const size_t burst_sizes[] = { 16, 17, 0, 100, 1000, 1472, 4096, 8191, 20, 30000, 33, 64, 1473, 500, 16, 2000 };
#define NBURST (sizeof(burst_sizes) / sizeof(burst_sizes[0]))

static size_t max_size, big_size, rx_size;
static char *rxbufs[NRX];

static void put_hdr(void *buf, int type, unsigned burst, unsigned seq, size_t len)
{
	struct hdr h = { MAGIC, (uint16_t) type, (uint16_t) burst, seq, (uint32_t) len };
	memcpy(buf, &h, sizeof(h));
	if (len > sizeof(h) && type == DATA)
		ft_fill((char *) buf + sizeof(h), len - sizeof(h), burst * 64 + seq);
}

/* Sends `len` bytes of `buf` to `dest` and waits for the send completion. */
static void send_dgram(const void *buf, size_t len, fi_addr_t dest, const char *what)
{
	struct fi_cq_msg_entry e;
	FT_POST(fi_send(ft_ep, buf, len, NULL, dest, (void *) buf), what);
	ft_cq_ok(ft_txcq, &e, what);
}

static void post_rx(int i)
{
	FT_POST(fi_recv(ft_ep, rxbufs[i], rx_size, NULL, FI_ADDR_UNSPEC, &rxbufs[i]), "fi_recv");
}

/* Polls the receive CQ for up to `ms`; returns the buffer index of a
 * datagram (entry in `e`, source in `src`) or -1. An error completion is
 * a failure (its buffer is posted again). */
static int poll_rx(int ms, struct fi_cq_msg_entry *e, fi_addr_t *src)
{
	double end = ft_now() + ms / 1000.0;
	do {
		ssize_t n = fi_cq_readfrom(ft_rxcq, e, 1, src);
		if (n == 1)
			return (int) ((char **) e->op_context - rxbufs);
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			if (fi_cq_readerr(ft_rxcq, &err, 0) != 1)
				ft_die("fi_cq_readerr failed");
			FT_CHECK(0, "receive error completion: %s (len %zu, olen %zu)", fi_strerror(err.err), err.len,
				 err.olen);
			if (err.op_context)
				post_rx((int) ((char **) err.op_context - rxbufs));
			continue;
		}
		if (n != -FI_EAGAIN)
			ft_die("fi_cq_readfrom: %s", fi_strerror((int) -n));
	} while (ft_now() < end);
	return -1;
}

/* Checks a datagram's header against its completion; returns the header
 * or NULL (counted in *bad) when it is malformed. */
static const struct hdr *check_dgram(const struct fi_cq_msg_entry *e, int i, unsigned *bad)
{
	static struct hdr h;
	long off;
	if (e->len < sizeof(h)) {
		FT_CHECK(e->len == 0, "a %zu-byte datagram (no header)", e->len);
		if (e->len)
			++*bad;
		return NULL;
	}
	memcpy(&h, rxbufs[i], sizeof(h));
	if (h.magic != MAGIC) {
		FT_CHECK(0, "datagram of %zu bytes without the magic", e->len);
		++*bad;
		return NULL;
	}
	FT_CHECK(e->len == h.len, "completion length %zu for a datagram sent with %u bytes (type %u burst %u seq %u)",
		 e->len, h.len, h.type, h.burst, h.seq);
	if (e->len != h.len) {
		++*bad;
		return &h;
	}
	FT_CHECK(e->flags & FI_RECV, "receive completion flags %#lx lack FI_RECV", (unsigned long) e->flags);
	if (h.type == DATA && h.len > sizeof(h)) {
		off = ft_verify(rxbufs[i] + sizeof(h), h.len - sizeof(h), h.burst * 64u + h.seq);
		FT_CHECK(off < 0, "burst %u seq %u (%u bytes): byte %ld differs", h.burst, h.seq, h.len,
			 off + (long) sizeof(h));
		if (off >= 0)
			++*bad;
	}
	return &h;
}

static void run_server(void)
{
	struct fi_cq_msg_entry e;
	struct report rep;
	char ack[sizeof(struct report)];
	uint64_t seen[3] = { 0 }; /* current burst, BIG_BURST, OVER_BURST */
	unsigned cur_burst = 0, zero = 0, bad = 0, reorders = 0, last_seq = 0;
	int done = 0, known = 0, rc;
	double end = ft_now() + 60;

	for (int i = 0; i < NRX; i++)
		post_rx(i);
	while (!done && ft_now() < end) {
		fi_addr_t src = 0;
		const struct hdr *h;
		int i = poll_rx(100, &e, &src);
		if (i < 0)
			continue;
		h = check_dgram(&e, i, &bad);
		if (known)
			FT_CHECK(src == ft_peer, "fi_cq_readfrom source %#lx, want the client's fi_addr %#lx",
				 (unsigned long) src, (unsigned long) ft_peer);
		if (!h) {
			if (e.len == 0)
				zero++;
			post_rx(i);
			continue;
		}
		switch (h->type) {
		case HELLO:
			if (!known) {
				FT_CHECK(src == FI_ADDR_NOTAVAIL,
					 "fi_cq_readfrom source %#lx for a sender not in the AV, want FI_ADDR_NOTAVAIL",
					 (unsigned long) src);
				if ((rc = fi_av_insert(ft_av, rxbufs[i] + sizeof(*h), 1, &ft_peer, 0, NULL)) != 1)
					ft_die("fi_av_insert(client) = %d", rc);
				known = 1;
			}
			post_rx(i);
			put_hdr(ack, ACK, 0, h->seq, sizeof(struct hdr));
			send_dgram(ack, sizeof(struct hdr), ft_peer, "send of ACK");
			break;
		case DATA: {
			unsigned slot = h->burst == BIG_BURST ? 1 : h->burst == OVER_BURST ? 2 : 0;
			FT_CHECK(h->len <= max_size, "a datagram of %u bytes exceeds max_msg_size %zu", h->len, max_size);
			if (slot == 0 && h->burst != cur_burst) {
				cur_burst = h->burst;
				seen[0] = 0;
				last_seq = 0;
			}
			if (slot == 0 && seen[0] && h->seq < last_seq)
				reorders++;
			if (slot == 0)
				last_seq = h->seq;
			if (h->seq < 64)
				seen[slot] |= 1ull << h->seq;
			post_rx(i);
			break;
		}
		case QUERY: {
			unsigned slot = h->burst == BIG_BURST ? 1 : h->burst == OVER_BURST ? 2 : 0;
			memset(&rep, 0, sizeof(rep));
			put_hdr(&rep, REPORT, h->burst, h->seq, sizeof(rep));
			rep.seen = slot || h->burst == cur_burst ? seen[slot] : 0;
			rep.zero = zero;
			rep.bad = bad;
			zero = 0;
			post_rx(i);
			send_dgram(&rep, sizeof(rep), ft_peer, "send of REPORT");
			break;
		}
		case BYE:
			post_rx(i);
			put_hdr(ack, BYEACK, 0, h->seq, sizeof(struct hdr));
			send_dgram(ack, sizeof(struct hdr), ft_peer, "send of BYEACK");
			done = 1;
			break;
		default:
			FT_CHECK(0, "unexpected datagram type %u", h->type);
			post_rx(i);
		}
	}
	if (!done)
		ft_die("no BYE from the client within 60 s");
	FT_CHECK(bad == 0, "%u datagrams had a wrong length or contents", bad);
	printf("server: %u out-of-order burst datagrams\n", reorders);
}

/* Client: sends `req` (len bytes) until an answer of type `want` for the
 * same burst and sequence arrives, at most `tries` times, 300 ms apart.
 * Returns the answer's buffer index (the caller posts it again) or -1. */
static int request(void *req, size_t len, int want, int tries, fi_addr_t server)
{
	struct hdr q;
	memcpy(&q, req, sizeof(q));
	for (int t = 0; t < tries; t++) {
		double end;
		send_dgram(req, len, server, "send of a request");
		end = ft_now() + 0.3;
		while (ft_now() < end) {
			struct fi_cq_msg_entry e;
			fi_addr_t src = 0;
			unsigned bad = 0;
			const struct hdr *h;
			int i = poll_rx(50, &e, &src);
			if (i < 0)
				continue;
			FT_CHECK(src == server, "fi_cq_readfrom source %#lx, want the server's fi_addr %#lx",
				 (unsigned long) src, (unsigned long) server);
			h = check_dgram(&e, i, &bad);
			FT_CHECK(bad == 0, "malformed answer from the server");
			if (h && h->type == want && h->burst == q.burst && h->seq == q.seq)
				return i;
			post_rx(i); /* an answer to an earlier, retransmitted request */
		}
	}
	return -1;
}

static struct report query(unsigned burst, unsigned qseq, fi_addr_t server)
{
	struct hdr q;
	struct report r;
	int i;
	put_hdr(&q, QUERY, burst, qseq, sizeof(q));
	i = request(&q, sizeof(q), REPORT, 20, server);
	if (i < 0)
		ft_die("no REPORT for burst %u", burst);
	memcpy(&r, rxbufs[i], sizeof(r));
	post_rx(i);
	FT_CHECK(r.bad == 0, "server saw %u bad datagrams", r.bad);
	return r;
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

static void run_client(void)
{
	char hello[256 + sizeof(struct hdr)], *big, *txs[NBURST];
	size_t nlen = 256;
	fi_addr_t server;
	unsigned lost = 0, qseq = 1, nsent = 0;
	int rc, i;
	struct report r;

	for (i = 0; i < NRX; i++)
		post_rx(i);
	if ((rc = fi_av_insert(ft_av, ft_info->dest_addr, 1, &server, 0, NULL)) != 1)
		ft_die("fi_av_insert(server) = %d", rc);
	if ((rc = fi_getname(&ft_ep->fid, hello + sizeof(struct hdr), &nlen)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	put_hdr(hello, HELLO, 0, 1, sizeof(struct hdr) + nlen);
	if ((i = request(hello, sizeof(struct hdr) + nlen, ACK, 30, server)) < 0)
		ft_die("no ACK to HELLO");
	post_rx(i);

	/* Bursts: sent once each, back to back. */
	for (unsigned s = 0; s < NBURST; s++)
		txs[s] = malloc(burst_sizes[s] + sizeof(struct hdr));
	for (int b = 0; b < ft_opts.iters; b++) {
		struct fi_cq_msg_entry e;
		uint64_t want = 0;
		unsigned nz = 0, n = 0, missing;
		for (unsigned s = 0; s < NBURST; s++) {
			size_t len = burst_sizes[s];
			if (len > max_size)
				continue;
			if (len)
				put_hdr(txs[s], DATA, (unsigned) b, s, len);
			FT_POST(fi_send(ft_ep, txs[s], len, NULL, server, txs[s]), "fi_send(burst)");
			if (len)
				want |= 1ull << s;
			else
				nz++;
			n++;
		}
		for (unsigned k = 0; k < n; k++)
			ft_cq_ok(ft_txcq, &e, "burst send");
		nsent += n;
		r = query((unsigned) b, qseq++, server);
		if ((r.seen & want) != want || r.zero != nz) {
			/* Maybe still on its way: ask once more. */
			struct report r2 = query((unsigned) b, qseq++, server);
			r.seen |= r2.seen;
			r.zero += r2.zero;
		}
		FT_CHECK((r.seen & ~want) == 0, "burst %d: server saw sequence numbers %#llx never sent", b,
			 (unsigned long long) (r.seen & ~want));
		FT_CHECK(r.zero <= nz, "burst %d: %u zero-length datagrams received, %u sent", b, r.zero, nz);
		missing = (unsigned) (popcount64(want & ~r.seen) + (r.zero < nz ? nz - r.zero : 0));
		if (missing)
			printf("client: burst %d: %u of %u datagrams lost (missing %#llx)\n", b, missing, n,
			       (unsigned long long) (want & ~r.seen));
		lost += missing;
	}
	for (unsigned s = 0; s < NBURST; s++)
		free(txs[s]);
	FT_CHECK(lost <= MAX_LOST, "%u of %u burst datagrams lost on loopback (at most %d tolerated)", lost, nsent,
		 MAX_LOST);
	ft_log("%d bursts, %u datagrams, %u lost", ft_opts.iters, nsent, lost);

	/* A datagram of max_msg_size (or CAP_SIZE), up to three tries. */
	big = malloc(big_size + 1);
	for (i = 0; i < 3; i++) {
		put_hdr(big, DATA, BIG_BURST, (unsigned) i, big_size);
		send_dgram(big, big_size, server, "send of max_msg_size");
		r = query(BIG_BURST, qseq++, server);
		if (r.seen & (1ull << i))
			break;
		printf("client: datagram of %zu bytes lost (try %d)\n", big_size, i + 1);
	}
	FT_CHECK(i < 3, "a datagram of max_msg_size (%zu bytes) never arrived in 3 tries", big_size);

	/* One byte more than max_msg_size: refused, never delivered. */
	if (max_size < CAP_SIZE) {
		struct fi_cq_msg_entry e;
		struct fi_cq_err_entry err;
		ssize_t ret;
		double end = ft_now() + 5;
		put_hdr(big, DATA, OVER_BURST, 0, max_size + 1);
		while ((ret = fi_send(ft_ep, big, max_size + 1, NULL, server, big)) == -FI_EAGAIN && ft_now() < end)
			(void) fi_cq_read(ft_txcq, NULL, 0);
		printf("client: fi_send of max_msg_size + 1 = %zu bytes returned %zd (%s)\n", max_size + 1, ret,
		       fi_strerror((int) -ret));
		FT_CHECK(ret <= 0 && ret != -FI_EAGAIN, "fi_send of max_msg_size + 1 returned %zd", ret);
		if (ret == 0) {
			int n = ft_cq_wait(ft_txcq, &e, &err, NULL);
			printf("client: its completion: %s\n", n < 0 ? fi_strerror(err.err) : "success");
			FT_CHECK(n < 0, "a send of max_msg_size + 1 = %zu bytes completed successfully", max_size + 1);
		}
		r = query(OVER_BURST, qseq++, server);
		FT_CHECK(r.seen == 0, "the datagram of max_msg_size + 1 bytes reached the server");
	} else {
		printf("client: max_msg_size %zu is beyond one UDP datagram; tried %zu bytes, no oversize check\n",
		       max_size, big_size);
	}
	free(big);

	{
		struct hdr q;
		put_hdr(&q, BYE, 0, 1, sizeof(q));
		if ((i = request(&q, sizeof(q), BYEACK, 5, server)) < 0)
			printf("client: no BYEACK (lost, or the server left)\n");
		else
			post_rx(i);
	}
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	ft_args(argc, argv, NULL, NULL);
	if (ft_ep_type != FI_EP_DGRAM)
		ft_die("fi_dgram needs -e dgram");
	hints = ft_hints(FI_MSG | FI_SOURCE);
	ft_setup(hints);
	FT_CHECK(ft_info->caps & FI_SOURCE, "fi_info caps %#llx lack FI_SOURCE", (unsigned long long) ft_info->caps);
	max_size = ft_info->ep_attr->max_msg_size;
	big_size = max_size < CAP_SIZE ? max_size : CAP_SIZE;
	rx_size = big_size;
	FT_CHECK(max_size >= 1472, "max_msg_size %zu is below one Ethernet MTU's UDP payload", max_size);
	ft_open_cqs(FI_CQ_FORMAT_MSG);
	ft_open_ep(ft_info);
	for (int i = 0; i < NRX; i++)
		if (!(rxbufs[i] = malloc(rx_size)))
			ft_die("malloc");
	ft_log("max_msg_size %zu", max_size);
	if (ft_is_client())
		run_client();
	else
		run_server();
	ft_teardown();
	for (int i = 0; i < NRX; i++)
		free(rxbufs[i]);
	{
		char label[64];
		snprintf(label, sizeof(label), "fi_dgram [%s]", ft_is_client() ? "client" : "server");
		return ft_report(label);
	}
}
