/*
 * fi_multinode_coll: NPROCS processes started together, one RDM endpoint
 * each (caps FI_MSG | FI_TAGGED | FI_COLLECTIVE, the EQ bound to it),
 * checking AV sets and collectives.
 *
 *   fi_multinode_coll -p PROV -n NPROCS -r RANK -B BASEPORT [-s ADDR] [-v] [-E] [-m MISSING]
 *                     [-K KILLED]
 *
 * multinode.sh starts the ranks (FT_MULTINODE_BIN names this program).
 * Rank r binds to BASEPORT + r on 127.0.0.1 (or -s, IPv4); all ranks'
 * addresses go into an FI_AV_TABLE AV in one call, in rank order, so
 * fi_addr r is rank r, and also position r in the whole group: whether
 * root_addr is read as an address or a position makes no difference.
 * With -E (providers whose addresses no port predicts, FI_ADDR_STR: shm)
 * the endpoints bind nowhere in particular and every rank's name comes
 * out of band instead, gathered by rank 0 over TCP on BASEPORT
 * (multinode_oob.h, as fi_multinode -E); the names go into the AV one
 * fi_av_insert each, in rank order, and fi_addr r must still be rank r.
 *
 * One line per check, "ok NAME", "FAIL NAME: why" or "SKIP NAME: why",
 * then "fi_multinode_coll rank R/N: N ok, N failed, N skipped". Exit 0 if
 * nothing failed, 77 after "SKIP: ..." if fi_getinfo has no FI_COLLECTIVE
 * entry, 1 if a check failed, 2 if something all checks need broke. -v
 * adds "note" lines: return codes, the CQ and flags of each completion,
 * what FI_JOIN_COMPLETE carried. All ranks sync point to point after each
 * check (bounded by 2 * FT_TIMEOUT, so one that times out does not sink
 * the next). The checks:
 *   av_insert; av_set range (start 0, end N-1, stride 1);
 *   av_set insert duplicate, av_set remove non-member: must fail (on a
 *     stride-2 set with room). The man page says neither; a set holds an
 *     address once (fi_av_set_union's wording): only "an error" is asked.
 *   join world: fi_join_collective on fi_av_set_addr of the range set;
 *     FI_JOIN_COMPLETE on the EQ with the new mc's fid and the join's
 *     context (fi_eq(3)); fi_mc_addr then names the group.
 *   barrier (3 rounds); broadcast root 0, root N-1 (2N elements) and odd
 *     count (2N+1); allreduce sum uint64, sum int32, max double;
 *     allgather; scatter root 0; gather root 0; reduce sum root 0;
 *     alltoall; reduce_scatter sum. Each asks fi_query_collective first
 *     (FI_NOOP/FI_VOID for the barrier, FI_ATOMIC_WRITE where data moves
 *     unreduced: the man page calls broadcast an atomic write); -FI_ENOSYS
 *     or -FI_EOPNOTSUPP gives "SKIP NAME: not supported". Its completion
 *     is sought on both CQs by op_context, for FT_TIMEOUT seconds. Data is
 *     uint64 unless named, 4 elements per member; guard bytes (a pattern
 *     per rank) after each result buffer must stay as they were.
 *   av_set stride, insert, remove, union, intersect, diff, empty,
 *     universe: a set built by those calls (build()). Its members are
 *     found locally first (fi_av_set_remove succeeds for members only), so
 *     a wrong set never starts a collective that would hang; then the
 *     members join it and allgather their ranks, which land in set order.
 *
 * With -m MISSING (multinode.sh does not start that rank; NPROCS >= 3;
 * with -E not rank 0, which puts a stale name, that of an endpoint it
 * opened and closed, at the missing rank's place) only these checks run,
 * after av_insert:
 *   join missing: a join of all NPROCS members must end in an EQ error
 *     entry, not hang, within 3 * FT_TIMEOUT: its barrier's sends to the
 *     missing member fail, and its receives still waiting are given up.
 *   join live: the set without the missing member (fi_av_set_remove)
 *     joins, then a barrier on it completes: the failed join's messages
 *     that arrived late do not disturb the next group.
 *
 * With -K KILLED (not rank 0), after join world that rank prints
 * "killing myself" and dies by SIGKILL (multinode.sh counts that as its
 * pass); the others then run only:
 *   broadcast from the dead, posted before: a broadcast rooted at the
 *     killed rank, posted by the others before it died (they only
 *     receive), ends in an error completion within 3 * FT_TIMEOUT once
 *     the transport sees the root gone;
 *   broadcast from the dead, posted after: the same posted half a second
 *     after the death fails too;
 *   barrier after death: a barrier of the whole group must end in an
 *     error completion within 3 * FT_TIMEOUT, not hang (its sends to the
 *     dead member fail once the transport sees it gone).
 *
 * Counts, which the man page leaves open, are per member, as Debian's
 * fi_allgather and fi_scatter count them: fi_allgather, fi_gather take
 * COUNT and give N * COUNT in rank order; fi_scatter takes N * COUNT at
 * the root and gives COUNT; fi_alltoall takes N blocks of COUNT (block j
 * for rank j) and gives N (block j from rank j); fi_reduce_scatter takes N
 * blocks of COUNT and gives COUNT (block r, reduced, at rank r).
 *
 * Debian's libfabric 1.17 (tcp;ofi_rxm) departs from the man pages here;
 * these checks keep the man pages' behaviour and fail there:
 *   - join world: FI_JOIN_COMPLETE's fid is not the new mc's but that of
 *     the group the join ran over (an mc inside the AV set, fclass 0).
 *   - broadcast odd count: a count that is no multiple of N gets
 *     ceil(count / N) * N elements written, past the buffer's end (and
 *     with 8 ranks the last one gets wrong data).
 *   - av_set remove: the last member moves into the hole (the man page:
 *     the others keep their order).
 *   - av_set intersect keeps the source's order and loses members that
 *     come in another order; av_set diff keeps the matching members and
 *     drops the last ones instead (both seen locally: nothing hangs).
 *   - av_set empty, universe: start_addr = end_addr = FI_ADDR_NOTAVAIL
 *     (the man page's empty set) gives -FI_ENOMEM; FI_UNIVERSE is ignored.
 * It also refuses fi_av_set_insert past the set's count (-FI_ENOMEM, even
 * for a duplicate), which the man page calls an expected size; and its
 * fi_query_collective says -FI_ENOSYS for gather, reduce, alltoall and
 * reduce_scatter (SKIPs there).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "shared.h"
#include <signal.h>
#include "multinode_oob.h"
#include <rdma/fi_collective.h>

#define MAXN 16
#define COUNT 4 /* elements per member block */
#define GUARD 16 /* guard bytes after every result */
#define MAXBYTES (MAXN * (2 * MAXN + 1) * 8)
#define NOPS 4096
#define SYNC_TAG 0x5000 /* point-to-point tags stay clear of the top bits */

static int nprocs, rank = -1, missing = -1, killed = -1, verbose;
static int nok, nfail, nskip;
static unsigned seed; /* makes each check's data its own */
static fi_addr_t group; /* fi_mc_addr of the whole group */

static void extra_opt(int opt, const char *arg)
{
	if (opt == 'n')
		nprocs = atoi(arg);
	else if (opt == 'r')
		rank = atoi(arg);
	else if (opt == 'm')
		missing = atoi(arg);
	else if (opt == 'K')
		killed = atoi(arg);
}

/* One check's line: "ok NAME", or "FAIL NAME: why", "SKIP NAME: why". */
static void say(const char *what, const char *name, const char *fmt, ...)
{
	va_list ap;
	printf("%s %s%s", what, name, fmt ? ": " : "\n");
	if (fmt) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	++*(*what == 'o' ? &nok : *what == 'F' ? &nfail : &nskip);
}
#define ok(name) say("ok", name, NULL)
#define fail(name, ...) say("FAIL", name, __VA_ARGS__)

/*
 * Operations in flight. Every operation's context is one of these, from a
 * static ring, so a completion that turns up after its check gave up is
 * still recorded somewhere harmless.
 */
struct op {
	int done, err, cq; /* cq: 0 transmit, 1 receive */
	uint64_t flags;
};
static struct op ops[NOPS];
static unsigned nops;

static struct op *op_new(void)
{
	struct op *o = &ops[nops++ % NOPS];
	memset(o, 0, sizeof(*o));
	return o;
}

/* Reads all both CQs hold (driving progress), marking operations done. */
static void poll_cqs(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	for (int q = 0, n; q < 2; q++) {
		while ((n = ft_cq_poll(q ? ft_rxcq : ft_txcq, &e, &err, NULL)) != 0) {
			struct op *o = n > 0 ? e.op_context : err.op_context;
			if ((uintptr_t) o < (uintptr_t) ops || (uintptr_t) o >= (uintptr_t) (ops + NOPS)) {
				printf("note: a completion whose context %p is no operation's\n", (void *) o);
				continue;
			}
			*o = (struct op){ .done = 1, .err = n < 0 ? err.err : 0, .cq = q, .flags = n > 0 ? e.flags : err.flags };
		}
	}
}

/* Issues `call` until it stops saying -FI_EAGAIN (bounded), driving
 * progress meanwhile; its result lands in `rc`. */
#define POST(rc, call) \
	do { \
		double post_end_ = ft_now() + FT_TIMEOUT; \
		while (((rc) = (call)) == -FI_EAGAIN && ft_now() < post_end_) \
			poll_cqs(); \
	} while (0)

/* Waits for `o`, bounded by `secs`: NULL once it completed without
 * error, else why not. */
static const char *op_wait(struct op *o, double secs)
{
	static char why[96];
	double end = ft_now() + secs;
	while (!o->done && ft_now() < end)
		poll_cqs();
	if (o->done && !o->err)
		return NULL;
	if (o->done)
		snprintf(why, sizeof(why), "error completion: %s", fi_strerror(o->err));
	else
		snprintf(why, sizeof(why), "no completion within %.0f s", secs);
	return why;
}

/*
 * Point-to-point sync of all ranks, whatever collectives the provider
 * has: each rank reports to rank 0 with a zero-byte tagged message, and
 * rank 0 answers each once it heard from all.
 */
static void sync_all(void)
{
	static unsigned round;
	struct op *o[2 * MAXN];
	uint64_t tag = SYNC_TAG + round++;
	int nrecv = rank == 0 ? nprocs - 1 - (missing >= 0) : 1, k;
	const char *why;
	ssize_t rc = 0;
	for (k = 0; k < nrecv; k++) {
		o[k] = op_new();
		POST(rc, fi_trecv(ft_ep, NULL, 0, NULL, FI_ADDR_UNSPEC, tag, 0, o[k]));
		if (rc)
			ft_die("sync %u: fi_trecv: %s", round, fi_strerror((int) -rc));
	}
	for (int i = 0; rank == 0 && i < nrecv; i++)
		if ((why = op_wait(o[i], 2 * FT_TIMEOUT)))
			ft_die("sync %u: waiting for the others: %s", round, why);
	for (int r = rank ? 0 : 1; r < (rank ? 1 : nprocs); r++) {
		if (r == missing)
			continue;
		o[k] = op_new();
		POST(rc, fi_tsend(ft_ep, NULL, 0, NULL, (fi_addr_t) r, tag, o[k]));
		if (rc)
			ft_die("sync %u: fi_tsend to rank %d: %s", round, r, fi_strerror((int) -rc));
		k++;
	}
	for (int i = 0; i < k; i++)
		if ((why = op_wait(o[i], 2 * FT_TIMEOUT)))
			ft_die("sync %u: %s", round, why);
}

static void bind_eq(struct fid_ep *ep)
{
	int rc = fi_ep_bind(ep, &ft_eq->fid, 0);
	if (rc)
		ft_die("fi_ep_bind(eq): %s", fi_strerror(-rc));
}

/* Every rank's address from the base port, inserted in one call (with
 * -E, `oob`: every rank's name from the exchange, one call each). */
static void insert_all(const char *port, int oob)
{
	struct sockaddr_in sin[MAXN];
	fi_addr_t fa[MAXN];
	int rc;
	if (oob) {
		static struct oob_names names;
		if (rank == 0 && missing >= 0)
			oob_stale_name(&names, missing);
		oob_gather_names(ft_ep, nprocs, rank, atoi(port) - rank, missing, &names);
		oob_insert_names(&names, nprocs, fa);
	} else {
		for (int k = 0; k < nprocs; k++) {
			sin[k] = (struct sockaddr_in){ .sin_family = AF_INET };
			sin[k].sin_port = htons((uint16_t) (atoi(port) - rank + k));
			if (inet_pton(AF_INET, ft_opts.src_addr ? ft_opts.src_addr : "127.0.0.1", &sin[k].sin_addr) != 1)
				ft_die("-s %s is not an IPv4 address", ft_opts.src_addr);
		}
		if ((rc = fi_av_insert(ft_av, sin, (size_t) nprocs, fa, 0, NULL)) != nprocs)
			ft_die("fi_av_insert of %d addresses = %d", nprocs, rc);
	}
	for (int k = 0; k < nprocs; k++)
		if (fa[k] != (fi_addr_t) k)
			ft_die("av_insert: rank %d got fi_addr %llu", k, (unsigned long long) fa[k]);
	ok("av_insert");
}

/* fi_query_collective for one check: 1 when it may run (*count, if given,
 * lowered to the provider's element limit), 0 after a SKIP or FAIL line. */
static int query(const char *name, enum fi_collective_op coll, enum fi_op op, enum fi_datatype dt, size_t *count)
{
	struct fi_collective_attr a = { .op = op, .datatype = dt };
	int rc = fi_query_collective(ft_domain, coll, &a, 0);
	if (rc == -FI_ENOSYS || rc == -FI_EOPNOTSUPP) {
		say("SKIP", name, "not supported");
		return 0;
	}
	if (rc) {
		fail(name, "fi_query_collective = %d (%s)", rc, fi_strerror(-rc));
		return 0;
	}
	if (a.max_members && a.max_members < (size_t) nprocs) {
		say("SKIP", name, "at most %zu members", a.max_members);
		return 0;
	}
	if (count && a.datatype_attr.count && a.datatype_attr.count < *count)
		*count = a.datatype_attr.count;
	return 1;
}

/*
 * Joins the collective group of `set` (through fi_av_set_addr) with
 * context `ctx` and waits for FI_JOIN_COMPLETE, whose entry lands in *e.
 * Returns the group, or NULL after a FAIL line.
 */
static struct fid_mc *join(const char *name, struct fid_av_set *set, void *ctx, struct fi_eq_entry *e)
{
	struct fid_mc *mc = NULL;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event = 0;
	double end = ft_now() + FT_TIMEOUT;
	fi_addr_t a;
	ssize_t n;
	int rc;
	if ((rc = fi_av_set_addr(set, &a))) {
		fail(name, "fi_av_set_addr = %d (%s)", rc, fi_strerror(-rc));
		return NULL;
	}
	if ((rc = fi_join_collective(ft_ep, a, set, 0, &mc, ctx))) {
		fail(name, "fi_join_collective = %d (%s)", rc, fi_strerror(-rc));
		return NULL;
	}
	while ((n = fi_eq_read(ft_eq, &event, e, sizeof(*e), 0)) == -FI_EAGAIN && ft_now() < end)
		poll_cqs(); /* the join's messages move as the CQs are read */
	if (n == (ssize_t) sizeof(*e) && event == FI_JOIN_COMPLETE)
		return mc;
	if (n == -FI_EAVAIL && fi_eq_readerr(ft_eq, &err, 0) >= 0)
		fail(name, "EQ error entry: %s", fi_strerror(err.err));
	else if (n < 0)
		fail(name, "fi_eq_read: %s", n == -FI_EAGAIN ? "no FI_JOIN_COMPLETE in time" : fi_strerror((int) -n));
	else
		fail(name, "EQ event %u of %zd bytes, want FI_JOIN_COMPLETE (%u) of %zu", event, n, FI_JOIN_COMPLETE,
		     sizeof(*e));
	return NULL; /* the mc stays open: its join may still be running */
}

/* Waits for the collective posted as `o` (the post returned `rc`): 0 once
 * it completed, else -1 after a FAIL line. */
static int finish(const char *name, ssize_t rc, struct op *o)
{
	const char *why = rc ? fi_strerror((int) -rc) : op_wait(o, FT_TIMEOUT);
	if (why) {
		fail(name, "%s%s", rc ? "post: " : "", why);
		return -1;
	}
	if (verbose)
		printf("note %s: completion on the %s CQ, flags %#llx\n", name, o->cq ? "receive" : "transmit",
		       (unsigned long long) o->flags);
	return 0;
}

/* One element of the types used here, stored from its first byte. */
union elem {
	uint64_t u;
	int32_t i;
	double d;
};

/* Element i of rank r's input to the current check. */
static union elem value(enum fi_datatype dt, int r, size_t i)
{
	union elem v = { 0 };
	if (dt == FI_INT32)
		v.i = (int32_t) ((i % 2 ? -1 : 1) * (r * 1000 + (int) seed * 10 + (int) i + 1));
	else if (dt == FI_DOUBLE)
		v.d = (size_t) r == i % (size_t) nprocs ? 1e6 + (double) (i + seed) : -(r * 1.5 + (double) i + seed * 0.25);
	else
		v.u = ((uint64_t) (r + 1) << 40) + ((uint64_t) seed << 20) + i * 7 + (uint64_t) r;
	return v;
}

/* a OP b, for the caller's op (FI_SUM or FI_MAX). */
#define MAX_OR_SUM(a, b) (op == FI_SUM ? (a) + (b) : (a) > (b) ? (a) : (b))

/* Element i of all ranks' inputs reduced with op. */
static union elem reduced(enum fi_datatype dt, enum fi_op op, size_t i)
{
	union elem a = value(dt, 0, i), b;
	for (int r = 1; r < nprocs; r++) {
		b = value(dt, r, i);
		if (dt == FI_INT32)
			a.i = MAX_OR_SUM(a.i, b.i);
		else if (dt == FI_DOUBLE)
			a.d = MAX_OR_SUM(a.d, b.d);
		else
			a.u = MAX_OR_SUM(a.u, b.u);
	}
	return a;
}

/* The collectives over the whole group, in the order they run. */
static const struct group_check {
	const char *name;
	enum fi_collective_op k;
	enum fi_op op;
	enum fi_datatype dt;
	int root_last; /* root: the last rank, else rank 0 */
	int count; /* elements per member block; -K: K * N; 0: 2N + 1 */
} checks[] = {
	{ "barrier", FI_BARRIER, FI_NOOP, FI_VOID, 0, 0 },
	{ "broadcast root 0", FI_BROADCAST, FI_ATOMIC_WRITE, FI_UINT64, 0, -2 },
	{ "broadcast root N-1", FI_BROADCAST, FI_ATOMIC_WRITE, FI_UINT64, 1, -2 },
	{ "broadcast odd count", FI_BROADCAST, FI_ATOMIC_WRITE, FI_UINT64, 0, 0 },
	{ "allreduce sum uint64", FI_ALLREDUCE, FI_SUM, FI_UINT64, 0, COUNT },
	{ "allreduce sum int32", FI_ALLREDUCE, FI_SUM, FI_INT32, 0, COUNT },
	{ "allreduce max double", FI_ALLREDUCE, FI_MAX, FI_DOUBLE, 0, COUNT },
	{ "allgather", FI_ALLGATHER, FI_ATOMIC_WRITE, FI_UINT64, 0, COUNT },
	{ "scatter root 0", FI_SCATTER, FI_ATOMIC_WRITE, FI_UINT64, 0, COUNT },
	{ "gather root 0", FI_GATHER, FI_ATOMIC_WRITE, FI_UINT64, 0, COUNT },
	{ "reduce sum root 0", FI_REDUCE, FI_SUM, FI_UINT64, 0, COUNT },
	{ "alltoall", FI_ALLTOALL, FI_ATOMIC_WRITE, FI_UINT64, 0, COUNT },
	{ "reduce_scatter sum", FI_REDUCE_SCATTER, FI_SUM, FI_UINT64, 0, COUNT },
};

/* One collective over the whole group: inputs from value(), the result
 * it must give computed here, then compared, guard included. The barrier
 * runs 3 rounds and moves no data. */
static void group_check(const struct group_check *c)
{
	static unsigned char in[MAXBYTES], out[MAXBYTES + GUARD], want[MAXBYTES];
	enum fi_collective_op k = c->k;
	enum fi_datatype dt = c->dt;
	size_t es = dt == FI_INT32 ? 4 : 8, n = (size_t) nprocs, inlen, outlen;
	size_t count = c->count > 0 ? (size_t) c->count : c->count < 0 ? (size_t) -c->count * n : 2 * n + 1;
	int root = c->root_last ? nprocs - 1 : 0;
	fi_addr_t ra = (fi_addr_t) root;
	enum fi_op op = c->op;
	struct op *o;
	ssize_t rc = 0;
	seed++;
	if (!query(c->name, k, op, dt, &count))
		return;
	for (int i = 0; k == FI_BARRIER && i < 3; i++) {
		o = op_new();
		POST(rc, fi_barrier(ft_ep, group, o));
		if (finish(c->name, rc, o))
			return;
	}
	if (k == FI_BARRIER) {
		ok(c->name);
		return;
	}
	o = op_new();
	inlen = k == FI_SCATTER || k == FI_ALLTOALL || k == FI_REDUCE_SCATTER ? n * count : count;
	outlen = k == FI_ALLGATHER || k == FI_GATHER || k == FI_ALLTOALL ? n * count : count;
	for (size_t j = 0; j < inlen; j++) {
		union elem v = value(dt, rank, j);
		memcpy(in + j * es, &v, es);
	}
	for (size_t j = 0, mine = (size_t) rank * count; j < outlen; j++) {
		union elem v;
		switch (k) {
		case FI_ALLREDUCE: case FI_REDUCE: v = reduced(dt, op, j); break;
		case FI_ALLGATHER: case FI_GATHER: v = value(dt, (int) (j / count), j % count); break;
		case FI_SCATTER: v = value(dt, root, mine + j); break;
		case FI_ALLTOALL: v = value(dt, (int) (j / count), mine + j % count); break;
		case FI_REDUCE_SCATTER: v = reduced(dt, op, mine + j); break;
		default: v = value(dt, root, j); break; /* broadcast */
		}
		memcpy(want + j * es, &v, es);
	}
	memset(out, 0x5a, outlen * es);
	memset(out + outlen * es, 0xa0 + rank, GUARD);
	if (k == FI_BROADCAST && rank == root)
		memcpy(out, in, count * es);
	switch (k) {
	case FI_BROADCAST: POST(rc, fi_broadcast(ft_ep, out, count, NULL, group, ra, dt, 0, o)); break;
	case FI_ALLREDUCE: POST(rc, fi_allreduce(ft_ep, in, count, NULL, out, NULL, group, dt, op, 0, o)); break;
	case FI_ALLGATHER: POST(rc, fi_allgather(ft_ep, in, count, NULL, out, NULL, group, dt, 0, o)); break;
	case FI_SCATTER: POST(rc, fi_scatter(ft_ep, in, count, NULL, out, NULL, group, ra, dt, 0, o)); break;
	case FI_GATHER: POST(rc, fi_gather(ft_ep, in, count, NULL, out, NULL, group, ra, dt, 0, o)); break;
	case FI_REDUCE: POST(rc, fi_reduce(ft_ep, in, count, NULL, out, NULL, group, ra, dt, op, 0, o)); break;
	case FI_ALLTOALL: POST(rc, fi_alltoall(ft_ep, in, count, NULL, out, NULL, group, dt, 0, o)); break;
	default: POST(rc, fi_reduce_scatter(ft_ep, in, count, NULL, out, NULL, group, dt, op, 0, o)); break;
	}
	if (finish(c->name, rc, o))
		return;
	if ((k == FI_GATHER || k == FI_REDUCE) && rank != root) {
		ok(c->name); /* their result is the root's only */
		return;
	}
	for (size_t i = 0; i < outlen * es; i += es) {
		uint64_t g = 0, w = 0;
		if (!memcmp(out + i, want + i, es))
			continue;
		memcpy(&g, out + i, es);
		memcpy(&w, want + i, es);
		fail(c->name, "element %zu is %#llx, want %#llx", i / es, (unsigned long long) g, (unsigned long long) w);
		return;
	}
	for (size_t i = 0; i < GUARD; i++)
		if (out[outlen * es + i] != (unsigned char) (0xa0 + rank)) {
			fail(c->name, "byte %zu past the %zu-byte result was overwritten", i, outlen * es);
			return;
		}
	ok(c->name);
}

/* A check of an AV set call that must fail. */
static void want_error(const char *name, int rc)
{
	if (verbose)
		printf("note %s: %d (%s)\n", name, rc, fi_strerror(-rc));
	if (rc < 0)
		ok(name);
	else
		fail(name, "returned %d, want an error", rc);
}

/* The AV sets of the membership checks (see build()). */
enum { S_STRIDE, S_INSERT, S_REMOVE, S_UNION, S_INTERSECT, S_DIFF, S_EMPTY, S_UNIVERSE, NSETS };
static const char *set_name[NSETS] = { "av_set stride", "av_set insert", "av_set remove", "av_set union",
				       "av_set intersect", "av_set diff", "av_set empty", "av_set universe" };

/* fi_av_set with those attributes, count N. */
static int av_set_of(fi_addr_t start, fi_addr_t end, uint64_t stride, uint64_t flags, struct fid_av_set **s)
{
	struct fi_av_set_attr a = {
		.count = (size_t) nprocs, .start_addr = start, .end_addr = end, .stride = stride, .flags = flags
	};
	return fi_av_set(ft_av, &a, s, NULL);
}

/* Does `call` unless an earlier one failed, remembering which failed. */
#define STEP(call) \
	do { \
		if (!rc) { \
			step = #call; \
			rc = (call); \
		} \
	} while (0)

/*
 * Builds set `which` into *s, and into want[] the ranks it must hold, in
 * the man pages' order (returns how many). On a failed call: -1, `why`
 * filled, nothing left open. N1 is N - 1.
 */
static int build(int which, struct fid_av_set **s, int *want, char *why, size_t len)
{
	const fi_addr_t N1 = (fi_addr_t) nprocs - 1;
	struct fid_av_set *o = NULL;
	const char *step = "";
	int rc = 0, k = 0;
	*s = NULL;
	if (which <= S_UNION && which != S_REMOVE) {
		STEP(av_set_of(0, N1, 2, 0, s)); /* stride: 0, 2, 4, ... */
		for (int r = 0; r < nprocs; r += 2)
			want[k++] = r;
		if (which == S_INSERT) { /* and 1 at the end */
			STEP(fi_av_set_insert(*s, 1));
			want[k++] = 1;
		} else if (which == S_UNION) { /* and the odd ranks, in the source's order */
			STEP(av_set_of(0, N1, 1, 0, &o));
			STEP(fi_av_set_union(*s, o));
			for (int r = 1; r < nprocs; r += 2)
				want[k++] = r;
		}
	} else if (which <= S_DIFF) {
		STEP(av_set_of(0, N1, 1, 0, s));
		if (which == S_REMOVE) { /* all but rank 0: 1, 2, ..., N-1 */
			STEP(fi_av_set_remove(*s, 0));
			for (int r = 1; r < nprocs; r++)
				want[k++] = r;
		} else if (which == S_INTERSECT) { /* with {N-1, 0}: 0, N-1, the destination's order */
			STEP(av_set_of(N1, N1, 1, 0, &o));
			STEP(fi_av_set_insert(o, 0));
			STEP(fi_av_set_intersect(*s, o));
			want[k++] = 0;
			want[k++] = (int) N1;
		} else { /* less the even ranks: 1, 3, ... */
			STEP(av_set_of(0, N1, 2, 0, &o));
			STEP(fi_av_set_diff(*s, o));
			for (int r = 1; r < nprocs; r += 2)
				want[k++] = r;
		}
	} else if (which == S_EMPTY) { /* empty, then N-1 and 0 inserted */
		STEP(av_set_of(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, 0, s));
		STEP(fi_av_set_insert(*s, N1));
		STEP(fi_av_set_insert(*s, 0));
		want[k++] = (int) N1;
		want[k++] = 0;
	} else { /* no range, FI_UNIVERSE: the whole AV in its order */
		STEP(av_set_of(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, FI_UNIVERSE, s));
		for (int r = 0; r < nprocs; r++)
			want[k++] = r;
	}
	if (o)
		fi_close(&o->fid);
	if (!rc)
		return k;
	snprintf(why, len, "%s = %d (%s)", step, rc, fi_strerror(-rc));
	if (*s)
		fi_close(&(*s)->fid);
	*s = NULL;
	return -1;
}

/* "{a,b,...}": the n ranks of list. */
static const char *show(char *buf, size_t len, const int *list, int n)
{
	size_t at = 0;
	for (int i = 0; i < n && at < len; i++)
		at += (size_t) snprintf(buf + at, len - at, "%c%d", i ? ',' : '{', list[i]);
	if (at < len)
		snprintf(buf + at, len - at, "%s}", n ? "" : "{");
	return buf;
}

/* One AV set check (see the top). */
static void set_check(int which, int have_allgather)
{
	static int ctx;
	const char *name = set_name[which];
	struct fid_av_set *s;
	struct fid_mc *mc;
	struct fi_eq_entry e;
	int want[MAXN], got[MAXN], sorted[MAXN], nw, ng = 0, ns = 0, me = -1;
	unsigned mask = 0;
	uint64_t mine = (uint64_t) rank, all[MAXN];
	char why[160], a[80], b[80];
	ssize_t rc;
	if ((nw = build(which, &s, want, why, sizeof(why))) < 0) {
		fail(name, "%s", why);
		return;
	}
	for (int r = 0; r < nprocs; r++)
		if (!fi_av_set_remove(s, (fi_addr_t) r))
			got[ng++] = r;
	fi_close(&s->fid);
	for (int i = 0; i < nw; i++) {
		mask |= 1u << want[i];
		me = want[i] == rank ? i : me;
	}
	for (int r = 0; r < nprocs; r++)
		if (mask >> r & 1)
			sorted[ns++] = r; /* want, in rank order */
	if (ng != ns || memcmp(got, sorted, sizeof(int) * (size_t) ns)) {
		fail(name, "members %s, want %s", show(a, sizeof(a), got, ng), show(b, sizeof(b), sorted, ns));
		return;
	}
	if (!have_allgather || me < 0) {
		ok(name); /* the order is seen from inside only */
		return;
	}
	if (build(which, &s, want, why, sizeof(why)) < 0) {
		fail(name, "second build: %s", why);
		return;
	}
	if (!(mc = join(name, s, &ctx, &e)))
		return;
	struct op *o = op_new();
	POST(rc, fi_allgather(ft_ep, &mine, 1, NULL, all, NULL, fi_mc_addr(mc), FI_UINT64, 0, o));
	if (finish(name, rc, o))
		return; /* mc and set stay open: the allgather may still run */
	for (int i = 0; i < nw; i++)
		got[i] = (int) all[i];
	int closed = !fi_close(&mc->fid) && !fi_close(&s->fid);
	if (memcmp(got, want, sizeof(int) * (size_t) nw))
		fail(name, "allgather over it gave %s, want %s", show(a, sizeof(a), got, nw), show(b, sizeof(b), want, nw));
	else if (!closed)
		fail(name, "fi_close of its mc or AV set failed");
	else
		ok(name);
}

/* -m: a join with a member that never started fails in bounded time;
 * the live members then form a group that works. */
static void missing_checks(void)
{
	struct fid_av_set *all = NULL, *alive = NULL;
	struct fid_mc *mc = NULL, *live_mc;
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry e;
	uint32_t event = 0;
	double t0 = ft_now(), end = t0 + 3 * FT_TIMEOUT;
	fi_addr_t a;
	ssize_t n = -FI_EAGAIN;
	int rc, ctx, live_ctx;
	struct op *o;

	if ((rc = av_set_of(0, (fi_addr_t) nprocs - 1, 1, 0, &all)) || (rc = fi_av_set_addr(all, &a)) ||
	    (rc = fi_join_collective(ft_ep, a, all, 0, &mc, &ctx))) {
		fail("join missing", "setting up the join: %d (%s)", rc, fi_strerror(-rc));
	} else {
		while ((n = fi_eq_read(ft_eq, &event, &e, sizeof(e), 0)) == -FI_EAGAIN && ft_now() < end)
			poll_cqs();
		if (n == -FI_EAVAIL && fi_eq_readerr(ft_eq, &err, 0) >= 0 && err.err && err.context == &ctx)
			ok("join missing");
		else if (n == -FI_EAVAIL)
			fail("join missing", "EQ error entry with err %d, context %p (want %p)", err.err, err.context,
			     (void *) &ctx);
		else if (n == -FI_EAGAIN)
			fail("join missing", "no EQ entry within %.0f s", 3 * FT_TIMEOUT);
		else
			fail("join missing", "fi_eq_read = %zd, event %u: the join completed without member %d", n,
			     event, missing);
		if (verbose || n == -FI_EAVAIL)
			printf("note: join missing: %s after %.2f s\n",
			       n == -FI_EAVAIL ? fi_strerror(err.err) : "no error", ft_now() - t0);
	}
	sync_all();
	if ((rc = av_set_of(0, (fi_addr_t) nprocs - 1, 1, 0, &alive)) ||
	    (rc = fi_av_set_remove(alive, (fi_addr_t) missing))) {
		fail("join live", "the set without rank %d: %d (%s)", missing, rc, fi_strerror(-rc));
	} else if ((live_mc = join("join live", alive, &live_ctx, &e))) {
		o = op_new();
		POST(rc, fi_barrier(ft_ep, fi_mc_addr(live_mc), o));
		if (!finish("join live", rc, o))
			ok("join live");
		fi_close(&live_mc->fid);
	}
	sync_all();
	/* The failed join's mc is closed last: the others' late messages of
	 * it are dropped with this endpoint, unmatched. */
	if (mc)
		fi_close(&mc->fid);
	if (alive)
		fi_close(&alive->fid);
	if (all)
		fi_close(&all->fid);
}

/* A broadcast rooted at the dead rank (the others only receive) ends in
 * an error completion within 3 * FT_TIMEOUT (o: posted already, else
 * posted now). */
static void bcast_from_dead(struct fid_mc *mc, struct op *o, const char *name)
{
	static uint64_t word;
	const char *why;
	double t0 = ft_now();
	ssize_t rc = 0;
	if (!o) {
		o = op_new();
		POST(rc, fi_broadcast(ft_ep, &word, 1, NULL, fi_mc_addr(mc), (fi_addr_t) killed, FI_UINT64, 0, o));
		if (rc) {
			fail(name, "fi_broadcast = %zd (%s)", rc, fi_strerror((int) -rc));
			return;
		}
	}
	why = op_wait(o, 3 * FT_TIMEOUT);
	if (!why)
		fail(name, "completed without rank %d", killed);
	else if (!o->done)
		fail(name, "%s", why);
	else
		ok(name);
	printf("note: %s: %s after %.2f s\n", name, why ? why : "no error", ft_now() - t0);
}

/* -K: rank `killed` dies; the others' collectives on the group must fail. */
static void after_death(struct fid_mc *mc)
{
	static uint64_t word;
	struct op *o, *pending = NULL;
	double t0;
	ssize_t rc;
	/* Posted before the death: the others wait for the root's word. */
	if (mc && rank != killed) {
		pending = op_new();
		POST(rc, fi_broadcast(ft_ep, &word, 1, NULL, fi_mc_addr(mc), (fi_addr_t) killed, FI_UINT64, 0, pending));
		if (rc) {
			fail("broadcast from the dead, posted before", "fi_broadcast = %zd (%s)", rc,
			     fi_strerror((int) -rc));
			pending = NULL;
		}
	}
	sync_all();
	if (rank == killed) {
		printf("killing myself\n");
		fflush(stdout);
		raise(SIGKILL);
	}
	missing = killed; /* sync_all leaves it out from now on */
	if (pending)
		bcast_from_dead(mc, pending, "broadcast from the dead, posted before");
	/* The death is over before the barrier starts: a message the dead
	 * member took in before it died (and so acknowledged) would leave the
	 * barrier waiting for its answer, which no transport fails (see the
	 * README's collectives section). */
	{
		struct timespec ts = { 0, 500 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (!mc) {
		say("SKIP", "barrier after death", "no group (join world failed)");
		return;
	}
	bcast_from_dead(mc, NULL, "broadcast from the dead, posted after");
	t0 = ft_now();
	o = op_new();
	POST(rc, fi_barrier(ft_ep, fi_mc_addr(mc), o));
	if (rc) {
		fail("barrier after death", "fi_barrier = %zd (%s)", rc, fi_strerror((int) -rc));
	} else {
		const char *why = op_wait(o, 3 * FT_TIMEOUT);
		if (!why)
			fail("barrier after death", "completed without rank %d", killed);
		else if (!o->done)
			fail("barrier after death", "%s", why);
		else
			ok("barrier after death");
		printf("note: barrier after death: %s after %.2f s\n", why ? why : "no error", ft_now() - t0);
	}
	sync_all();
	fi_close(&mc->fid);
}

int main(int argc, char **argv)
{
	struct fid_av_set *world = NULL, *evens = NULL;
	struct fid_mc *mc = NULL;
	struct fi_info *hints;
	struct fi_eq_entry e;
	struct fi_collective_attr ga = { .op = FI_ATOMIC_WRITE, .datatype = FI_UINT64 };
	char port[16], label[64];
	int rc, ctx, oob;

	ft_args(argc, argv, "n:r:m:K:", extra_opt);
	if (nprocs < 2 || nprocs > MAXN || rank < 0 || rank >= nprocs || rank == missing || missing >= nprocs ||
	    (missing >= 0 && nprocs < 3) || (ft_opts.oob && missing == 0) || killed == 0 || killed >= nprocs ||
	    (killed > 0 && (nprocs < 3 || missing >= 0)))
		ft_die("usage: fi_multinode_coll -p PROV -n NPROCS(2..%d) -r RANK -B BASEPORT [-s ADDR] [-v] [-E] "
		       "[-m MISSING | -K KILLED (NPROCS >= 3)]",
		       MAXN);
	verbose = ft_opts.verbose;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ft_ep_type = FI_EP_RDM;
	snprintf(port, sizeof(port), "%d", atoi(ft_opts.src_port) + rank);
	ft_opts.src_port = port;
	hints = ft_hints(FI_MSG | FI_TAGGED | FI_COLLECTIVE);
	ft_require(hints, "FI_COLLECTIVE on RDM endpoints");
	ft_setup(hints);
	ft_open_cqs(FI_CQ_FORMAT_TAGGED);
	ft_before_enable = bind_eq; /* FI_JOIN_COMPLETE goes there */
	oob = oob_claim();
	ft_open_ep(ft_info);
	insert_all(port, oob);
	sync_all(); /* every endpoint is up */
	if (missing >= 0) {
		missing_checks();
		goto out;
	}

	if ((rc = av_set_of(0, (fi_addr_t) nprocs - 1, 1, 0, &world)))
		fail("av_set range", "fi_av_set(0..N-1, stride 1) = %d (%s)", rc, fi_strerror(-rc));
	else
		ok("av_set range");
	if ((rc = av_set_of(0, (fi_addr_t) nprocs - 1, 2, 0, &evens))) {
		fail("av_set insert duplicate", "fi_av_set(0..N-1, stride 2) = %d (%s)", rc, fi_strerror(-rc));
	} else {
		want_error("av_set insert duplicate", fi_av_set_insert(evens, 0));
		want_error("av_set remove non-member", fi_av_set_remove(evens, 1));
		fi_close(&evens->fid);
	}
	sync_all();

	if (world && (mc = join("join world", world, &ctx, &e))) {
		group = fi_mc_addr(mc);
		if (e.fid != &mc->fid || e.context != &ctx)
			fail("join world", "FI_JOIN_COMPLETE's fid %p (fclass %d), context %p; want the mc's %p, the join's %p",
			     (void *) e.fid, e.fid ? (int) e.fid->fclass : -1, e.context, (void *) &mc->fid, (void *) &ctx);
		else
			ok("join world");
	}
	sync_all();
	if (killed > 0) {
		after_death(mc);
		if (world)
			fi_close(&world->fid);
		goto out;
	}
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		if (!mc) {
			say("SKIP", checks[i].name, "no group (join world failed)");
			continue;
		}
		group_check(&checks[i]);
		sync_all();
	}
	for (int s = 0; s < NSETS; s++) {
		set_check(s, mc && !fi_query_collective(ft_domain, FI_ALLGATHER, &ga, 0));
		sync_all();
	}

	if (mc && fi_close(&mc->fid))
		fail("close", "fi_close of the group's mc failed");
	if (world && fi_close(&world->fid))
		fail("close", "fi_close of the range AV set failed");
out:
	snprintf(label, sizeof(label), "fi_multinode_coll rank %d/%d", rank, nprocs);
	ft_teardown();
	printf("%s: %d ok, %d failed, %d skipped\n", label, nok, nfail, nskip);
	return nfail ? 1 : 0;
}
