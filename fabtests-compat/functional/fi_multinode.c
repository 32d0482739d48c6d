/*
 * fi_multinode: NPROCS processes started together, one RDM endpoint each,
 * talking at once (in the spirit of upstream fabtests' multinode test).
 *
 *   fi_multinode -p PROV -n NPROCS -r RANK -B BASEPORT [-s ADDR] [-I N]
 *
 * Rank r binds its endpoint to BASEPORT + r on 127.0.0.1 (or -s, IPv4), so
 * every address is known in advance: no rendezvous, and no process waits
 * for another's endpoint before sending. A send to a peer whose endpoint
 * is not open yet must be retried by the provider until the peer
 * listens (a reliable endpoint's promise), not fail.
 *
 * Patterns, each -I times, each on a tag of its own (so that messages of
 * a later pattern from a faster peer wait as unexpected ones), every
 * message carrying source, destination, pattern and round in its header
 * and a payload derived from them, checked on arrival:
 *   mesh       every rank sends to every other one
 *   ring       rank r sends to r + 1, receives from r - 1
 *   gather     every rank sends to rank 0
 *   broadcast  rank 0 sends to every other rank
 * Finally a gather and broadcast of "done" keeps every endpoint open
 * until all ranks have everything. Prints "N checks, N failed".
 *
 * -D MS (default 100): rank r opens its endpoint r * MS milliseconds after
 * it starts, as launch jitter would have it, so that lower ranks surely
 * send to endpoints that are not there yet (0: all at once).
 *
 * -E (for providers whose addresses no port names, FI_ADDR_STR: shm):
 * the names are gathered out of band instead. Rank 0 listens on TCP
 * BASEPORT of 127.0.0.1; every other rank, once its endpoint is open,
 * sends its rank and name there and gets back the table of all names
 * (multinode_oob.h). Every rank then waits for the slowest one's
 * endpoint; sends to endpoints not yet open are not exercised. With -m,
 * rank 0 (which must not be the missing one) puts a stale name at the
 * missing rank's place: that of a second endpoint it opened and closed,
 * so the sends to it go to an address nobody listens on any more.
 *
 * -m RANK: that rank never starts (multinode.sh leaves it out). Every
 * other rank first sends one message to it, which must fail within
 * FT_TIMEOUT seconds, as an error completion or an error returned by
 * fi_tsend (not -FI_EAGAIN for ever, not a hang); the patterns then run
 * among the ranks that are there (ring over them, rank root the lowest).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include "multinode_oob.h"
#include <arpa/inet.h>
#include <netinet/in.h>

#define MAXN 16
#define PAY 1000
#define MAGIC 0x6d6e6f64u

enum { MESH = 1, RING, GATHER, BCAST, DONE_UP, DONE_DOWN, NPAT };
static const char *pat_name[] = { "", "mesh", "ring", "gather", "broadcast", "done-gather", "done-broadcast" };

struct msg {
	uint32_t magic, src, dst, pat, round;
	unsigned char payload[PAY];
};

static int nprocs, rank = -1, missing = -1, stagger_ms = 100;
static fi_addr_t addrs[MAXN];

static void extra_opt(int opt, const char *arg)
{
	if (opt == 'n')
		nprocs = atoi(arg);
	else if (opt == 'r')
		rank = atoi(arg);
	else if (opt == 'm')
		missing = atoi(arg);
	else if (opt == 'D')
		stagger_ms = atoi(arg);
}

static int live(int k)
{
	return k != missing;
}

/* -m: one send to the missing rank must fail within FT_TIMEOUT. */
static void send_to_missing(void)
{
	static struct msg m;
	double t0 = ft_now(), end = t0 + FT_TIMEOUT;
	ssize_t rc;
	m.magic = MAGIC;
	m.src = (uint32_t) rank;
	m.dst = (uint32_t) missing;
	while ((rc = fi_tsend(ft_ep, &m, sizeof(m), NULL, addrs[missing], (uint64_t) NPAT << 32, &m)) == -FI_EAGAIN &&
	       ft_now() < end)
		(void) fi_cq_read(ft_txcq, NULL, 0);
	if (rc == -FI_EAGAIN) {
		FT_CHECK(0, "send to missing rank %d: fi_tsend still -FI_EAGAIN after %.0f s", missing, FT_TIMEOUT);
		return;
	}
	if (rc < 0) {
		printf("rank %d: send to missing rank %d refused by fi_tsend after %.2f s: %s\n", rank, missing,
		       ft_now() - t0, fi_strerror((int) -rc));
		return;
	}
	while (ft_now() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_poll(ft_txcq, &e, &err, NULL);
		if (n == 1) {
			FT_CHECK(0, "send to missing rank %d completed successfully", missing);
			return;
		}
		if (n < 0) {
			FT_CHECK(err.op_context == &m, "error completion with context %p, want the send's %p",
				 err.op_context, (void *) &m);
			printf("rank %d: send to missing rank %d failed after %.2f s: %s\n", rank, missing, ft_now() - t0,
			       fi_strerror(err.err));
			return;
		}
	}
	FT_CHECK(0, "send to missing rank %d: no completion within %.0f s", missing, FT_TIMEOUT);
}

static unsigned seed_of(uint32_t src, uint32_t dst, uint32_t pat, uint32_t round)
{
	return ((src * MAXN + dst) * NPAT + pat) * 1000 + round;
}

/* One pattern round: posts the receives this rank expects (from the
 * ranks in `from`), sends to the ranks in `to`, waits for all. */
static void run_round(int pat, int round, const int *to, int nto, int nfrom)
{
	static struct msg txm[MAXN], rxm[MAXN];
	int seen[MAXN] = { 0 };
	uint64_t tag = (uint64_t) pat << 32 | (uint32_t) round;
	char what[96];

	for (int k = 0; k < nfrom; k++)
		FT_POST(fi_trecv(ft_ep, &rxm[k], sizeof(rxm[k]), NULL, FI_ADDR_UNSPEC, tag, 0, &rxm[k]), "fi_trecv");
	for (int k = 0; k < nto; k++) {
		struct msg *m = &txm[k];
		m->magic = MAGIC;
		m->src = (uint32_t) rank;
		m->dst = (uint32_t) to[k];
		m->pat = (uint32_t) pat;
		m->round = (uint32_t) round;
		ft_fill(m->payload, PAY, seed_of(m->src, m->dst, m->pat, m->round));
		snprintf(what, sizeof(what), "%s round %d: fi_tsend to rank %d", pat_name[pat], round, to[k]);
		FT_POST(fi_tsend(ft_ep, m, sizeof(*m), NULL, addrs[to[k]], tag, m), what);
	}
	for (int k = 0; k < nto; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		snprintf(what, sizeof(what), "%s round %d: send completion", pat_name[pat], round);
		int n = ft_cq_wait(ft_txcq, &e, &err, NULL);
		if (n < 0) {
			int dst = err.op_context ? (int) ((struct msg *) err.op_context)->dst : -1;
			ft_die("%s round %d: send to rank %d failed: %s (prov_errno %d)", pat_name[pat], round, dst,
			       fi_strerror(err.err), err.prov_errno);
		}
	}
	for (int k = 0; k < nfrom; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = ft_cq_wait(ft_rxcq, &e, &err, NULL);
		if (n < 0)
			ft_die("%s round %d: receive failed: %s", pat_name[pat], round, fi_strerror(err.err));
		struct msg *m = e.op_context;
		FT_CHECK(e.len == sizeof(*m) && m->magic == MAGIC && e.tag == tag,
			 "%s round %d: message of %zu bytes, magic %#x, tag %#llx", pat_name[pat], round, e.len, m->magic,
			 (unsigned long long) e.tag);
		FT_CHECK(m->dst == (uint32_t) rank && m->pat == (uint32_t) pat && m->round == (uint32_t) round &&
				 m->src < (uint32_t) nprocs,
			 "%s round %d: header src %u dst %u pattern %u round %u", pat_name[pat], round, m->src, m->dst, m->pat,
			 m->round);
		if (m->src < (uint32_t) nprocs && ++seen[m->src] != 1)
			FT_CHECK(0, "%s round %d: %d messages from rank %u", pat_name[pat], round, seen[m->src], m->src);
		long bad = ft_verify(m->payload, PAY, seed_of(m->src, m->dst, m->pat, m->round));
		FT_CHECK(bad < 0, "%s round %d: message from rank %u: byte %ld differs", pat_name[pat], round, m->src, bad);
	}
}

static void pattern(int pat, int round)
{
	int to[MAXN], nto = 0, nfrom = 0, nlive = nprocs - (missing >= 0), root = live(0) ? 0 : 1, next = rank;
	switch (pat) {
	case MESH:
		for (int k = 0; k < nprocs; k++)
			if (k != rank && live(k))
				to[nto++] = k;
		nfrom = nlive - 1;
		break;
	case RING:
		do
			next = (next + 1) % nprocs;
		while (!live(next));
		to[nto++] = next;
		nfrom = 1;
		break;
	case GATHER:
	case DONE_UP:
		if (rank != root)
			to[nto++] = root;
		nfrom = rank != root ? 0 : nlive - 1;
		break;
	case BCAST:
	case DONE_DOWN:
		if (rank == root)
			for (int k = 0; k < nprocs; k++)
				if (k != root && live(k))
					to[nto++] = k;
		nfrom = rank != root ? 1 : 0;
		break;
	}
	run_round(pat, round, to, nto, nfrom);
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	char port[16];
	int rc, oob;

	ft_args(argc, argv, "n:r:m:D:", extra_opt);
	if (nprocs < 2 || nprocs > MAXN || rank < 0 || rank >= nprocs || rank == missing || missing >= nprocs ||
	    (missing >= 0 && nprocs < 3) || (ft_opts.oob && missing == 0))
		ft_die("usage: fi_multinode -p PROV -n NPROCS(2..%d) -r RANK -B BASEPORT [-m MISSING_RANK (NPROCS >= 3)]",
		       MAXN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (stagger_ms > 0) {
		long ms = (long) stagger_ms * rank;
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	ft_ep_type = FI_EP_RDM;
	snprintf(port, sizeof(port), "%d", atoi(ft_opts.src_port) + rank);
	ft_opts.src_port = port;
	hints = ft_hints(FI_MSG | FI_TAGGED);
	ft_require(hints, "tagged rdm endpoints");
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	oob = oob_claim();
	ft_open_ep(ft_info);
	if (oob) {
		static struct oob_names names;
		if (rank == 0 && missing >= 0)
			oob_stale_name(&names, missing);
		oob_gather_names(ft_ep, nprocs, rank, atoi(port) - rank, missing, &names);
		oob_insert_names(&names, nprocs, addrs);
	}
	/* Every rank's address from the base port, no exchange (IPv4). */
	for (int k = 0; k < nprocs && !oob; k++) {
		struct sockaddr_in sin = { .sin_family = AF_INET };
		sin.sin_port = htons((uint16_t) (atoi(port) - rank + k));
		if (inet_pton(AF_INET, ft_opts.src_addr ? ft_opts.src_addr : "127.0.0.1", &sin.sin_addr) != 1)
			ft_die("-s %s is not an IPv4 address", ft_opts.src_addr);
		rc = fi_av_insert(ft_av, &sin, 1, &addrs[k], 0, NULL);
		if (rc != 1)
			ft_die("fi_av_insert(rank %d, port %u) = %d", k, ntohs(sin.sin_port), rc);
	}
	ft_log("rank %d of %d on port %s", rank, nprocs, port);
	if (missing >= 0)
		send_to_missing();
	for (int pat = MESH; pat <= BCAST; pat++) {
		for (int i = 0; i < ft_opts.iters; i++)
			pattern(pat, i);
		printf("rank %d: %s done\n", rank, pat_name[pat]);
	}
	pattern(DONE_UP, 0);
	pattern(DONE_DOWN, 0);
	char label[64];
	snprintf(label, sizeof(label), "fi_multinode rank %d/%d", rank, nprocs);
	ft_teardown();
	return ft_report(label);
}
