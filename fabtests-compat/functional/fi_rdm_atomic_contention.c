/*
 * fi_rdm_atomic_contention: N processes (-n, default 4: the server and
 * three initiators) hammer the same 64-bit words of the server's memory at
 * the same time. The client process forks the other initiators before it
 * touches libfabric, so one server/client pair of fabtests-compat/run
 * stands for the whole group; every initiator has its own fabric, domain,
 * endpoint and address.
 *
 * Once all initiators have introduced themselves, the server hands out
 * the key and address of three words and says "go"; each initiator then
 * runs -I rounds (default 1000) of:
 *
 *   A  fi_atomic(FI_SUM, +1)                   final A = initiators * I
 *   B  fi_fetch_atomic(FI_SUM, +1)             final B = initiators * I;
 *      the values fetched, over all initiators, are exactly 0..B-1 (sum
 *      and sum of squares checked at the server; each initiator's own
 *      values strictly increase)
 *   C  an fi_compare_atomic(FI_CSWAP) increment loop: retry with the
 *      fetched value until the swap succeeds; final C = initiators * I
 *
 * and reports its sums in a message sent after its last completion (so
 * the server sees every result before it, fi_atomic(3)). A lost update,
 * a torn read or a fetch that two initiators both got fails the totals.
 *
 * Run: -e rdm [-n processes] [-I rounds] [-o sum|fadd|cswap|all] (-o: one
 * of the three loops only, default all).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "onesided.h"
#include <errno.h>
#include <sys/wait.h>

static int nproc = 4;
static int ops = 7; /* -o: bit 0 FI_SUM, bit 1 fetch-add, bit 2 CSWAP loop */

struct report {
	uint64_t rounds, sum, sumsq, cswap_retries;
	uint64_t ok; /* the initiator's own checks passed */
};

static void opt(int c, const char *arg)
{
	if (c == 'n')
		nproc = atoi(arg);
	else if (c == 'o')
		ops = !strcmp(arg, "sum") ? 1 : !strcmp(arg, "fadd") ? 2 : !strcmp(arg, "cswap") ? 4 : 7;
}

/* The CQs block in fi_cq_sread: several busy-polling processes would
 * starve each other (and a provider's progress thread) on a small host. */
static void open_cqs(void)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC, .size = 256 };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	int rc;
	if ((rc = fi_cq_open(ft_domain, &ca, &ft_txcq, NULL)) || (rc = fi_cq_open(ft_domain, &ca, &ft_rxcq, NULL)))
		ft_die("fi_cq_open(FI_WAIT_UNSPEC): %s", fi_strerror(-rc));
	if ((rc = fi_av_open(ft_domain, &aa, &ft_av, NULL)))
		ft_die("fi_av_open: %s", fi_strerror(-rc));
}

/* One successful completion from cq, blocking in fi_cq_sread, bounded. */
static void cq_sread(struct fid_cq *cq, struct fi_cq_tagged_entry *e, const char *what)
{
	double end = ft_now() + FT_TIMEOUT;
	while (ft_now() < end) {
		ssize_t n = fi_cq_sread(cq, e, 1, NULL, 100);
		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			ft_die("%s: error completion %s (prov_errno %d)", what, fi_strerror(err.err), err.prov_errno);
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT)
			ft_die("%s: fi_cq_sread: %s", what, fi_strerror((int) -n));
	}
	ft_die("%s: no completion within %.0f s", what, FT_TIMEOUT);
}

static void atomic_wait(const char *what)
{
	struct fi_cq_tagged_entry e;
	cq_sread(ft_txcq, &e, what);
}

static char ctl[2][OS_CTL];
static struct os_mr ctlmr;

static void send_to(fi_addr_t to, const void *p, size_t len, const char *what)
{
	static int ctx;
	memcpy(ctl[0], p, len);
	struct fi_cq_tagged_entry e;
	FT_POST(fi_send(ft_ep, ctl[0], len, ctlmr.desc, to, &ctx), what);
	cq_sread(ft_txcq, &e, what);
}

static size_t recv_any(void *p, size_t cap, const char *what)
{
	static int ctx;
	struct fi_cq_tagged_entry e;
	FT_POST(fi_recv(ft_ep, ctl[1], OS_CTL, ctlmr.desc, FI_ADDR_UNSPEC, &ctx), what);
	cq_sread(ft_rxcq, &e, what);
	if (e.len > cap)
		ft_die("%s: %zu bytes", what, e.len);
	memcpy(p, ctl[1], e.len);
	return e.len;
}



static int initiator(void)
{
	struct report r = { 0, 0, 0, 0, 1 };
	struct os_rkey words;
	uint64_t one = 1, res = 0, cmp = 0, next = 0, last = 0;
	char name[256];
	size_t len = sizeof(name);
	int rc, have_last = 0;
	struct fi_info *hints = os_hints(FI_MSG | FI_ATOMIC);
	os_require(hints);
	ft_setup(hints);
	open_cqs();
	os_mr_mode = ft_info->domain_attr->mr_mode;
	ft_open_ep(ft_info);
	os_reg(&ctlmr, ctl, sizeof(ctl), FI_SEND | FI_RECV | FI_READ | FI_WRITE);
	if ((rc = fi_av_insert(ft_av, ft_info->dest_addr, 1, &ft_peer, 0, NULL)) != 1)
		ft_die("fi_av_insert(server) = %d", rc);
	if ((rc = fi_getname(&ft_ep->fid, name, &len)))
		ft_die("fi_getname: %s", fi_strerror(-rc));
	send_to(ft_peer, name, len, "send of this initiator's name");
	if (recv_any(&words, sizeof(words), "receive of the words' key") != sizeof(words))
		ft_die("short key message");
	/* operands live in the registered control region (FI_MR_LOCAL) */
	uint64_t *v = (uint64_t *) (void *) ctl[0];
	for (uint64_t i = 0; i < (uint64_t) ft_opts.iters; i++) {
		v[0] = one;
		if (ops & 1) {
		FT_POST(fi_atomic(ft_ep, &v[0], 1, ctlmr.desc, ft_peer, words.addr, words.key, FI_UINT64, FI_SUM, NULL),
			"fi_atomic(FI_SUM)");
		atomic_wait("fi_atomic(FI_SUM)");
		}
		v[1] = one;
		if (ops & 2) {
		FT_POST(fi_fetch_atomic(ft_ep, &v[1], 1, ctlmr.desc, &v[2], ctlmr.desc, ft_peer, words.addr + 8, words.key,
					FI_UINT64, FI_SUM, NULL),
			"fi_fetch_atomic(FI_SUM)");
		atomic_wait("fi_fetch_atomic(FI_SUM)");
		res = v[2];
		if (have_last && res <= last) {
			FT_CHECK(0, "fetch-add returned %llu after %llu: the word went backwards or repeated",
				 (unsigned long long) res, (unsigned long long) last);
			r.ok = 0;
		}
		last = res, have_last = 1;
		r.sum += res;
		r.sumsq += res * res;
		}
		for (; ops & 4;) {
			v[3] = next + 1;
			v[4] = next;
			FT_POST(fi_compare_atomic(ft_ep, &v[3], 1, ctlmr.desc, &v[4], ctlmr.desc, &v[5], ctlmr.desc, ft_peer,
						  words.addr + 16, words.key, FI_UINT64, FI_CSWAP, NULL),
				"fi_compare_atomic(FI_CSWAP)");
			atomic_wait("fi_compare_atomic(FI_CSWAP)");
			cmp = v[5];
			if (cmp == next) {
				next = cmp + 1;
				break;
			}
			if (cmp < next) {
				FT_CHECK(0, "CSWAP fetched %llu, below the %llu this initiator already saw",
					 (unsigned long long) cmp, (unsigned long long) next);
				r.ok = 0;
			}
			next = cmp;
			r.cswap_retries++;
		}
		r.rounds++;
	}
	send_to(ft_peer, &r, sizeof(r), "send of the report");
	os_unreg(&ctlmr);
	return ft_finish("fi_rdm_atomic_contention");
}

static int server(void)
{
	int n = nproc - 1;
	fi_addr_t *peers = calloc((size_t) n, sizeof(*peers));
	static uint64_t words[3];
	struct os_mr wmr;
	struct os_rkey k;
	uint64_t sum = 0, sumsq = 0, rounds = 0, retries = 0, total;
	int ok = 1;
	struct fi_info *hints = os_hints(FI_MSG | FI_ATOMIC);
	os_require(hints);
	ft_setup(hints);
	open_cqs();
	os_mr_mode = ft_info->domain_attr->mr_mode;
	ft_open_ep(ft_info);
	os_reg(&ctlmr, ctl, sizeof(ctl), FI_SEND | FI_RECV);
	os_reg(&wmr, words, sizeof(words), FI_REMOTE_READ | FI_REMOTE_WRITE);
	k = os_rkey_of(&wmr, 0, sizeof(words));
	for (int i = 0; i < n; i++) {
		char name[256];
		int rc;
		recv_any(name, sizeof(name), "receive of an initiator's name");
		if ((rc = fi_av_insert(ft_av, name, 1, &peers[i], 0, NULL)) != 1)
			ft_die("fi_av_insert(initiator %d) = %d", i, rc);
	}
	for (int i = 0; i < n; i++)
		send_to(peers[i], &k, sizeof(k), "send of the words' key (go)");
	for (int i = 0; i < n; i++) {
		struct report r;
		if (recv_any(&r, sizeof(r), "receive of an initiator's report") != sizeof(r))
			ft_die("short report");
		sum += r.sum, sumsq += r.sumsq, rounds += r.rounds, retries += r.cswap_retries;
		ok &= r.ok != 0;
	}
	total = (uint64_t) n * (uint64_t) ft_opts.iters;
	FT_CHECK(rounds == total, "reports cover %llu rounds, want %llu", (unsigned long long) rounds,
		 (unsigned long long) total);
	FT_CHECK(words[0] == (ops & 1 ? total : 0), "FI_SUM word: %llu, want %llu (%d initiators x %d)", (unsigned long long) words[0],
		 (unsigned long long) total, n, ft_opts.iters);
	FT_CHECK(words[1] == (ops & 2 ? total : 0), "fetch-add word: %llu, want %llu", (unsigned long long) words[1],
		 (unsigned long long) total);
	FT_CHECK(words[2] == (ops & 4 ? total : 0), "CSWAP word: %llu, want %llu", (unsigned long long) words[2],
		 (unsigned long long) total);
	{
		/* the fetched values must be 0..total-1, each once */
		uint64_t want_sum = 0, want_sq = 0;
		for (uint64_t x = 0; x < total; x++)
			want_sum += x, want_sq += x * x;
		FT_CHECK(!(ops & 2) || (sum == want_sum && sumsq == want_sq),
			 "fetched values are not 0..%llu each once (sum %llu, want %llu; squares %llu, want %llu)",
			 (unsigned long long) total - 1, (unsigned long long) sum, (unsigned long long) want_sum,
			 (unsigned long long) sumsq, (unsigned long long) want_sq);
	}
	FT_CHECK(ok, "an initiator's own ordering checks failed");
	printf("fi_rdm_atomic_contention: %d initiators x %d rounds, %llu CSWAP retries\n", n, ft_opts.iters,
	       (unsigned long long) retries);
	os_unreg(&wmr);
	os_unreg(&ctlmr);
	free(peers);
	return ft_finish("fi_rdm_atomic_contention");
}

int main(int argc, char **argv)
{
	int status = 0;
	ft_opts.iters = 1000;
	ft_args(argc, argv, "n:o:", opt);
	if (ft_ep_type != FI_EP_RDM)
		ft_die("fi_rdm_atomic_contention runs on RDM endpoints (-e rdm)");
	if (nproc < 2)
		ft_die("-n must be at least 2");
	if (!ft_is_client())
		return server();
	/* The skip check runs in a child of its own, so that the initiators
	 * are forked before this process makes any libfabric call. */
	pid_t kids[64];
	int nk = nproc - 2 < 64 ? nproc - 2 : 64, st = 0;
	fflush(stdout);
	kids[0] = fork();
	if (kids[0] < 0)
		ft_die("fork: %s", strerror(errno));
	if (kids[0] == 0) {
		os_require(os_hints(FI_MSG | FI_ATOMIC));
		exit(0);
	}
	if (waitpid(kids[0], &st, 0) != kids[0] || !WIFEXITED(st))
		ft_die("the capability probe process failed");
	if (WEXITSTATUS(st) != 0)
		return WEXITSTATUS(st); /* 77: it printed the SKIP line */
	for (int i = 0; i < nk; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			ft_die("fork: %s", strerror(errno));
		if (kids[i] == 0)
			exit(initiator());
	}
	status = initiator();
	for (int i = 0; i < nk; i++) {
		int st = 0;
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("FAIL [client]: initiator process %d exited %s %d\n", i + 2,
			       WIFEXITED(st) ? "with" : "on signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			status = status ? status : 1;
		}
	}
	return status;
}
