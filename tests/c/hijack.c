/*
 * A local process that speaks the sockets provider's wire protocol by hand
 * must not be able to take another peer's traffic:
 *
 * 1. Forged clear-to-send: P sends a 1 MiB tagged message (rendezvous) to
 *    T, which has not posted a receive yet. An attacker connects to P,
 *    says Hello and sends clear-to-send frames for message ids 0..4095.
 *    It must receive no data frame; once T posts its receive, the message
 *    arrives at T intact and P's send completes without error.
 * 2. Replayed handshake, live peer: P and T are connected. An attacker
 *    connects to T with a Hello naming P's address. T's next messages to
 *    P must reach P, none the attacker; P's messages still reach T.
 * 3. Replayed handshake, peer not yet connected: an attacker claims P2's
 *    address at T2 before P2 and T2 ever talked; T2's messages to P2 must
 *    reach P2 and none the attacker.
 * 4. Known message id, another connection: the attacker is a peer P3
 *    talks to, so it learns P3's message ids (its own 1 MiB message's
 *    announcement) and the next one, meant for T3. Its clear-to-send for
 *    that id on its own connection, and on a second connection whose
 *    Hello claims T3's address, gets no data; T3 still receives intact.
 *
 * The frame layout is the one documented in providers/sockets/src/wire.rs.
 * Every wait is bounded. Run by t-hijack.sh.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define OP_HELLO 1
#define OP_MSG 2
#define OP_HELLO_ACK 8
#define OP_RTS 10
#define OP_CTS 11
#define OP_DATA 12
#define BIG (1u << 20)

static int failures;

#define EXPECT(cond, ...)                                                   \
	do {                                                                \
		if (!(cond)) {                                              \
			failures++;                                         \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
			printf(__VA_ARGS__);                                \
			printf("\n");                                       \
		}                                                           \
	} while (0)

/* One endpoint with its own CQ and AV, manual progress. */
struct node {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct sockaddr_in addr;
	uint64_t sends, recvs, errors;
	int last_err;
};

static struct fid_domain *domain;
static struct fi_info *info;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static void open_node(struct node *n)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 256 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(n->addr);
	memset(n, 0, sizeof(*n));
	if (fi_cq_open(domain, &ca, &n->cq, NULL) || fi_av_open(domain, &aa, &n->av, NULL) ||
	    fi_endpoint(domain, info, &n->ep, NULL) || fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(n->ep, &n->av->fid, 0) || fi_enable(n->ep) || fi_getname(&n->ep->fid, &n->addr, &len)) {
		printf("FAIL: endpoint setup\n");
		exit(1);
	}
}

static fi_addr_t insert(struct node *n, const struct node *peer)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	if (fi_av_insert(n->av, &peer->addr, 1, &a, 0, NULL) != 1) {
		printf("FAIL: fi_av_insert\n");
		exit(1);
	}
	return a;
}

/* Reads one node's CQ: counts completions by kind and errors. */
static void poll_node(struct node *n)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t r = fi_cq_read(n->cq, e, 8);
	for (ssize_t i = 0; i < r; i++) {
		if (e[i].flags & FI_SEND)
			n->sends++;
		else
			n->recvs++;
	}
	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };
		fi_cq_readerr(n->cq, &err, 0);
		n->errors++;
		n->last_err = err.err;
	}
}

/* The attacker's side of a raw connection: every frame it was sent. */
struct raw {
	int s;
	uint8_t hdr[40];
	size_t have;       /* header bytes read */
	uint64_t skip;     /* payload bytes still to skip */
	uint64_t frames[16];
	uint64_t bytes;
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static void frame(uint8_t h[40], uint8_t op, uint64_t len, uint64_t msg_id)
{
	memset(h, 0, 40);
	h[0] = 1;
	h[1] = op;
	put64(h + 8, len);
	put64(h + 32, msg_id);
}

static void raw_open(struct raw *r, const struct sockaddr_in *to, const struct sockaddr_in *claim)
{
	uint8_t h[40];
	memset(r, 0, sizeof(*r));
	r->s = socket(AF_INET, SOCK_STREAM, 0);
	if (r->s < 0 || connect(r->s, (const struct sockaddr *) to, sizeof(*to))) {
		printf("FAIL: attacker connect: %s\n", strerror(errno));
		exit(1);
	}
	frame(h, OP_HELLO, sizeof(*claim), 0);
	EXPECT(send(r->s, h, 40, MSG_NOSIGNAL) == 40 && send(r->s, claim, sizeof(*claim), MSG_NOSIGNAL) == sizeof(*claim),
	       "attacker hello");
}

/* Reads whatever the endpoint sent the attacker and counts frames by op. */
static void raw_drain(struct raw *r)
{
	uint8_t buf[65536];
	for (;;) {
		ssize_t n = recv(r->s, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			return;
		r->bytes += (uint64_t) n;
		for (ssize_t i = 0; i < n;) {
			if (r->skip) {
				uint64_t k = (uint64_t) (n - i) < r->skip ? (uint64_t) (n - i) : r->skip;
				r->skip -= k;
				i += (ssize_t) k;
				continue;
			}
			r->hdr[r->have++] = buf[i++];
			if (r->have == 40) {
				uint64_t len = 0;
				for (int b = 7; b >= 0; b--)
					len = len << 8 | r->hdr[8 + b];
				r->frames[r->hdr[1] & 15]++;
				r->skip = len;
				r->have = 0;
			}
		}
	}
}

/* Drives the nodes (and drains the attackers) until cond or the deadline. */
#define DRIVE_UNTIL(secs, cond, nodes, nn, raws, nr)                        \
	do {                                                                \
		double end_ = now() + (secs);                               \
		while (!(cond) && now() < end_) {                           \
			for (int i_ = 0; i_ < (nn); i_++)                   \
				poll_node((nodes)[i_]);                     \
			for (int i_ = 0; i_ < (nr); i_++)                   \
				raw_drain((raws)[i_]);                      \
		}                                                           \
	} while (0)

static void forged_cts(struct node *p, struct node *t)
{
	static char out[BIG], in[BIG];
	struct raw a;
	struct node *nodes[] = { p, t };
	struct raw *raws[] = { &a };
	for (size_t i = 0; i < BIG; i++)
		out[i] = (char) (i * 7 + 3);
	memset(in, 0, sizeof(in));
	fi_addr_t to_t = insert(p, t);
	insert(t, p);
	EXPECT(fi_tsend(p->ep, out, BIG, NULL, to_t, 7, NULL) == 0, "fi_tsend 1 MiB");
	DRIVE_UNTIL(0.2, 0, nodes, 2, raws, 0);

	/* The attacker claims an address of its own (nobody's) and guesses
	 * message ids, one connection per guess (a wrong id closes it). */
	struct sockaddr_in fake = p->addr;
	fake.sin_port = htons(9);
	uint64_t data_frames = 0, bytes = 0;
	for (uint64_t id = 1; id <= 64; id++) {
		uint8_t h[40];
		raw_open(&a, &p->addr, &fake);
		DRIVE_UNTIL(0.002, 0, nodes, 2, raws, 1);
		frame(h, OP_CTS, 0, id);
		(void) !send(a.s, h, 40, MSG_NOSIGNAL);
		DRIVE_UNTIL(0.01, 0, nodes, 2, raws, 1);
		data_frames += a.frames[OP_DATA];
		bytes += a.bytes;
		close(a.s);
	}
	a.frames[OP_DATA] = data_frames;
	a.bytes = bytes;
	EXPECT(a.frames[OP_DATA] == 0 && a.bytes < 65536,
	       "forged clear-to-send: the attacker received %llu data frames, %llu bytes",
	       (unsigned long long) a.frames[OP_DATA], (unsigned long long) a.bytes);

	EXPECT(fi_trecv(t->ep, in, BIG, NULL, FI_ADDR_UNSPEC, 7, 0, NULL) == 0, "fi_trecv 1 MiB");
	DRIVE_UNTIL(10, t->recvs + t->errors >= 1 && p->sends + p->errors >= 1, nodes, 2, raws, 1);
	EXPECT(t->recvs == 1 && t->errors == 0, "forged clear-to-send: T received %llu, errors %llu (last %d)",
	       (unsigned long long) t->recvs, (unsigned long long) t->errors, t->last_err);
	EXPECT(p->sends == 1 && p->errors == 0, "forged clear-to-send: P's send completed %llu, errors %llu (last %d)",
	       (unsigned long long) p->sends, (unsigned long long) p->errors, p->last_err);
	EXPECT(memcmp(in, out, BIG) == 0, "forged clear-to-send: T's data differs from what P sent");
}

/* The attacker claims `victim`'s address at `target`; target then sends
 * to the victim and the victim to target. */
static void replayed_hello(struct node *victim, struct node *target, int connect_first, const char *what)
{
	enum { N = 10 };
	uint64_t in_v[N], in_t[N], out[N];
	struct raw a;
	struct node *nodes[] = { victim, target };
	struct raw *raws[] = { &a };
	fi_addr_t to_v = insert(target, victim), to_t = insert(victim, target);
	uint64_t rv0 = victim->recvs, rt0 = target->recvs, sv0 = victim->sends, st0 = target->sends;
	if (connect_first) {
		static uint64_t one = 42, got;
		EXPECT(fi_trecv(target->ep, &got, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL) == 0, "fi_trecv");
		EXPECT(fi_tsend(victim->ep, &one, 8, NULL, to_t, 1, NULL) == 0, "fi_tsend");
		DRIVE_UNTIL(5, target->recvs > rt0 && victim->sends > sv0, nodes, 2, raws, 0);
		EXPECT(target->recvs == rt0 + 1 && got == 42, "%s: the first connection did not work", what);
		rt0 = target->recvs;
		sv0 = victim->sends;
	}
	raw_open(&a, &target->addr, &victim->addr);
	DRIVE_UNTIL(0.2, 0, nodes, 2, raws, 1);

	for (int i = 0; i < N; i++) {
		out[i] = 1000 + (uint64_t) i;
		EXPECT(fi_trecv(victim->ep, &in_v[i], 8, NULL, FI_ADDR_UNSPEC, 9, 0, NULL) == 0, "fi_trecv victim");
		EXPECT(fi_trecv(target->ep, &in_t[i], 8, NULL, FI_ADDR_UNSPEC, 10, 0, NULL) == 0, "fi_trecv target");
	}
	for (int i = 0; i < N; i++) {
		EXPECT(fi_tsend(target->ep, &out[i], 8, NULL, to_v, 9, NULL) == 0, "fi_tsend target->victim");
		EXPECT(fi_tsend(victim->ep, &out[i], 8, NULL, to_t, 10, NULL) == 0, "fi_tsend victim->target");
	}
	DRIVE_UNTIL(10,
		    victim->recvs >= rv0 + N && target->recvs >= rt0 + N && victim->sends >= sv0 + N &&
			    target->sends >= st0 + N,
		    nodes, 2, raws, 1);
	EXPECT(a.frames[OP_MSG] == 0 && a.frames[OP_DATA] == 0, "%s: the attacker received %llu messages", what,
	       (unsigned long long) (a.frames[OP_MSG] + a.frames[OP_DATA]));
	EXPECT(victim->recvs == rv0 + N, "%s: the victim received %llu of %d messages", what,
	       (unsigned long long) (victim->recvs - rv0), N);
	EXPECT(target->recvs == rt0 + N, "%s: the target received %llu of %d messages from the victim", what,
	       (unsigned long long) (target->recvs - rt0), N);
	EXPECT(victim->errors == 0 && target->errors == 0, "%s: error completions (victim %llu, target %llu)", what,
	       (unsigned long long) victim->errors, (unsigned long long) target->errors);
	for (int i = 0; i < N && victim->recvs == rv0 + N; i++)
		EXPECT(in_v[i] == out[i] && in_t[i] == out[i], "%s: message %d differs", what, i);
	close(a.s);
}

/* Reads one frame header from a raw socket while driving the nodes (the
 * payload, if any, is read and dropped). Returns 0, or -1 on timeout/EOF. */
static int read_frame(int s, uint8_t h[40], struct node **nodes, int nn)
{
	size_t got = 0;
	uint64_t len = 0;
	double end = now() + 5;
	while (now() < end) {
		for (int i = 0; i < nn; i++)
			poll_node(nodes[i]);
		if (got < 40) {
			ssize_t n = recv(s, h + got, 40 - got, MSG_DONTWAIT);
			if (n == 0)
				return -1;
			if (n > 0)
				got += (size_t) n;
			/* An announcement's length is the message's; it has no payload. */
			if (got == 40 && h[1] != OP_RTS)
				for (int b = 7; b >= 0; b--)
					len = len << 8 | h[8 + b];
		} else if (len) {
			uint8_t skip[4096];
			ssize_t n = recv(s, skip, len < sizeof(skip) ? len : sizeof(skip), MSG_DONTWAIT);
			if (n == 0)
				return -1;
			if (n > 0)
				len -= (uint64_t) n;
		}
		if (got == 40 && !len)
			return 0;
	}
	return -1;
}

static void known_id_cts(struct node *p, struct node *t)
{
	static char out[BIG], in[BIG];
	struct node *nodes[] = { p, t };
	struct sockaddr_in x = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t xl = sizeof(x);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *) &x, sizeof(x)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *) &x, &xl)) {
		printf("FAIL: attacker listen\n");
		exit(1);
	}
	for (size_t i = 0; i < BIG; i++)
		out[i] = (char) (i * 5 + 1);
	memset(in, 0, sizeof(in));
	fi_addr_t to_x, to_t = insert(p, t);
	insert(t, p);
	if (fi_av_insert(p->av, &x, 1, &to_x, 0, NULL) != 1) {
		printf("FAIL: fi_av_insert\n");
		exit(1);
	}
	/* P announces a 1 MiB message to the attacker, who answers the
	 * handshake and reads the announcement's message id. */
	EXPECT(fi_tsend(p->ep, out, BIG, NULL, to_x, 3, NULL) == 0, "fi_tsend to the attacker");
	int s = -1;
	double end = now() + 5;
	while (s < 0 && now() < end) {
		poll_node(p);
		s = accept(l, NULL, NULL);
	}
	uint8_t h[40];
	uint64_t id = 0;
	int ok = s >= 0 && read_frame(s, h, nodes, 2) == 0 && h[1] == OP_HELLO;
	if (ok) {
		frame(h, OP_HELLO_ACK, 0, 0);
		ok = send(s, h, 40, MSG_NOSIGNAL) == 40 && read_frame(s, h, nodes, 2) == 0 && h[1] == OP_RTS;
		for (int b = 7; ok && b >= 0; b--)
			id = id << 8 | h[32 + b];
	}
	EXPECT(ok, "known id: the attacker did not get P's announcement (socket %d, last op %d)", s, h[1]);
	/* The next message, to T, has the next id. */
	EXPECT(fi_tsend(p->ep, out, BIG, NULL, to_t, 7, NULL) == 0, "fi_tsend to T");
	DRIVE_UNTIL(0.1, 0, nodes, 2, (struct raw **) NULL, 0);
	struct raw a;
	struct raw *raws[] = { &a };
	raw_open(&a, &p->addr, &t->addr);
	DRIVE_UNTIL(0.1, 0, nodes, 2, raws, 1);
	for (uint64_t k = id + 1; k <= id + 4; k++) {
		frame(h, OP_CTS, 0, k);
		(void) !send(a.s, h, 40, MSG_NOSIGNAL);
	}
	DRIVE_UNTIL(0.1, 0, nodes, 2, raws, 1);
	EXPECT(a.frames[OP_DATA] == 0 && a.bytes < 65536,
	       "known id, claimed address: the attacker received %llu data frames, %llu bytes",
	       (unsigned long long) a.frames[OP_DATA], (unsigned long long) a.bytes);
	close(a.s);
	/* The same ids on the attacker's own connection with P. */
	struct raw own = { .s = s };
	struct raw *owns[] = { &own };
	for (uint64_t k = id + 1; k <= id + 4; k++) {
		frame(h, OP_CTS, 0, k);
		(void) !send(s, h, 40, MSG_NOSIGNAL);
	}
	DRIVE_UNTIL(0.2, 0, nodes, 2, owns, 1);
	EXPECT(own.frames[OP_DATA] == 0 && own.bytes < 65536,
	       "known id, own connection: the attacker received %llu data frames, %llu bytes",
	       (unsigned long long) own.frames[OP_DATA], (unsigned long long) own.bytes);
	close(s);
	close(l);
	/* P's send to the attacker fails (its connection was closed for the
	 * forged frame); the one to T completes, and T gets it intact. */
	EXPECT(fi_trecv(t->ep, in, BIG, NULL, FI_ADDR_UNSPEC, 7, 0, NULL) == 0, "fi_trecv 1 MiB");
	DRIVE_UNTIL(10, t->recvs + t->errors >= 1 && p->sends + p->errors >= 2, nodes, 2, raws, 0);
	EXPECT(t->recvs == 1 && t->errors == 0, "known id: T received %llu, errors %llu (last %d)",
	       (unsigned long long) t->recvs, (unsigned long long) t->errors, t->last_err);
	EXPECT(p->sends == 1 && p->errors == 1, "known id: P's sends completed %llu, errors %llu (want 1 and 1)",
	       (unsigned long long) p->sends, (unsigned long long) p->errors);
	EXPECT(memcmp(in, out, BIG) == 0, "known id: T's data differs from what P sent");
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fid_fabric *fabric;
	struct node p, t, p2, t2, p3, t3;
	hints->fabric_attr->prov_name = strdup(getenv("HIJACK_PROV") ? getenv("HIJACK_PROV") : "sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL)) {
		printf("FAIL: setup\n");
		return 1;
	}
	open_node(&p);
	open_node(&t);
	forged_cts(&p, &t);
	replayed_hello(&p, &t, 1, "replayed hello, live peer");
	open_node(&p2);
	open_node(&t2);
	replayed_hello(&p2, &t2, 0, "replayed hello, peer not yet connected");
	open_node(&p3);
	open_node(&t3);
	known_id_cts(&p3, &t3);
	printf("hijack: %s\n", failures ? "FAILED" : "no traffic taken, legitimate peers undisturbed");
	return failures ? 1 : 0;
}
