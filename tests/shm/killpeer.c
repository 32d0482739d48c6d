/*
 * A shm peer killed with SIGKILL while messages to it are in flight
 * (tests/shm/t-killpeer.sh starts one process per role, all inside one
 * private mount namespace):
 *
 *   killpeer victim DIR
 *       opens an RDM endpoint, publishes its name in DIR/victim.name,
 *       receives the survivor's hello and answers it (so the two are
 *       connected, however the provider connects), then writes
 *       DIR/victim.idle, prints READY and never drives progress again (so
 *       nothing sent to it is consumed); it is killed with -9.
 *   killpeer survivor DIR
 *       says hello to the victim and waits for its answer and for
 *       DIR/victim.idle, then sends to the victim: LARGE_N messages of LARGE bytes (they cannot
 *       complete before the victim takes them) and small messages until
 *       the provider pushes back (-FI_EAGAIN) or SMALL_MAX are posted;
 *       prints SENDING; once the victim is killed, every send must end
 *       within KILL_BOUND seconds, the large ones all as error
 *       completions whose err is a connection error (FI_ECONNRESET or
 *       alike), whose op_context is the send's, and whose fi_cq_strerror
 *       text names the victim (its address string) and more; then a new
 *       send to the dead peer must fail within 2 s (its post or its
 *       completion).
 *   killpeer server DIR / killpeer client DIR
 *       a new pair started after the kill: the client's first message
 *       must arrive at once (its round trip within START_BOUND seconds of
 *       the client opening its endpoint), then 64 B and 1 MiB ping-pongs
 *       with data checks.
 *
 * Every wait is bounded; a hang is a failure. Each role prints
 * "ROLE: N checks, N failed" and exits 0 only without failures.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "../c/check.h"
#include "shm_ep.h"

#define LARGE (4u << 20)
#define LARGE_N 2
#define SMALL 64
#define SMALL_MAX 4096
#define KILL_BOUND 5.0
#define START_BOUND 2.0
#define NAME_MAX_LEN 256

static const char *dir;

static void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

/* Opens fabric, domain, tagged CQ, AV and an enabled RDM endpoint of shm. */
static void open_ep(void)
{
	struct fi_info *hints = shm_hints(FI_MSG | FI_TAGGED);
	hints->mode = 0;
	hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	shm_open_ep(hints, FI_CQ_FORMAT_TAGGED, 8192);
}

static void close_all(void)
{
	shm_close_ep();
}

/* Writes this endpoint's name to DIR/WHO.name (whole, by a rename). */
static void publish(const char *who)
{
	char name[NAME_MAX_LEN], tmp[512], path[512];
	size_t len = sizeof(name);
	FILE *f;
	CHECK(fi_getname(&ep->fid, name, &len));
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, who);
	snprintf(path, sizeof(path), "%s/%s.name", dir, who);
	if (!(f = fopen(tmp, "w")) || fwrite(name, 1, len, f) != len || fclose(f) || rename(tmp, path))
		die("writing the endpoint name", -FI_EIO);
}

/* Reads DIR/WHO.name (waiting for it, bounded) into name; returns its length. */
static size_t lookup(const char *who, char *name)
{
	char path[512];
	double end = now() + 20;
	snprintf(path, sizeof(path), "%s/%s.name", dir, who);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (f) {
			size_t n = fread(name, 1, NAME_MAX_LEN - 1, f);
			fclose(f);
			name[n] = 0;
			return n;
		}
		if (now() > end)
			die("waiting for the peer's name", -FI_ETIMEDOUT);
		nap_ms(10);
	}
}

static fi_addr_t insert(const char *who, char *name)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	lookup(who, name);
	if (fi_av_insert(av, name, 1, &a, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	return a;
}

/* One completion, bounded: 1 (entry filled), -err (err filled) or 0 on
 * timeout. */
static int wait_one(double secs, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
	double end = now() + secs;
	do {
		ssize_t n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) != 1)
				die("fi_cq_readerr", -FI_EIO);
			return err->err ? -err->err : -FI_EOTHER;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read", n);
	} while (now() < end);
	return 0;
}

/* fi_tsend, retried while it answers -FI_EAGAIN (connection setup,
 * back-pressure) and progress is driven, for at most `secs` seconds;
 * returns the last answer. */
static ssize_t tsend(const void *buf, size_t len, fi_addr_t to, uint64_t tag, void *ctx, double secs)
{
	double end = now() + secs;
	ssize_t rc;
	while ((rc = fi_tsend(ep, buf, len, NULL, to, tag, ctx)) == -FI_EAGAIN && now() < end)
		(void) fi_cq_read(cq, NULL, 0);
	return rc;
}

/* The error codes that say "the peer's connection is gone". */
static int conn_error(int err)
{
	return err == FI_ECONNRESET || err == FI_ECONNABORTED || err == FI_ENOTCONN || err == FI_EHOSTUNREACH ||
	       err == FI_ECONNREFUSED || err == FI_EIO || err == FI_ESHUTDOWN;
}

static int report(const char *role)
{
	printf("%s: %d checks, %d failed\n", role, checks, failures);
	return failures ? 1 : 0;
}

static int survivor(void)
{
	static char large[LARGE_N][LARGE], small[SMALL];
	/* op_context of send i: &ctx[i]; done[i] once it completed. */
	static char ctx[LARGE_N + SMALL_MAX], done[LARGE_N + SMALL_MAX];
	char victim_name[NAME_MAX_LEN];
	int posted = 0, nsmall = 0, completed = 0, errors = 0, named = 0, large_errors = 0;
	fi_addr_t v;
	open_ep();
	publish("survivor");
	v = insert("victim", victim_name);
	{
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		char ack[8];
		CHECK(fi_trecv(ep, ack, sizeof(ack), NULL, v, 0x51, 0, ack));
		CHECK(tsend("hello", 6, v, 0x50, small, 10));
		for (int k = 0; k < 2; k++)
			if (wait_one(10, &e, &err) != 1)
				die("hello/answer with the victim", -FI_ETIMEDOUT);
		lookup("victim-idle", ack);
	}
	for (int i = 0; i < LARGE_N; i++) {
		memset(large[i], 'L' + i, LARGE);
		CHECK(tsend(large[i], LARGE, v, 0x100 + (uint64_t) i, &ctx[posted], 5));
		posted++;
	}
	memset(small, 's', sizeof(small));
	while (nsmall < SMALL_MAX) {
		ssize_t rc = tsend(small, SMALL, v, 0x200, &ctx[posted], 0.1);
		if (rc == -FI_EAGAIN)
			break;
		CHECK(rc);
		posted++, nsmall++;
	}
	/* Drive progress a while: small messages that fit the victim's
	 * queue complete; the large ones cannot (nobody takes them). */
	{
		double end = now() + 0.5;
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		while (now() < end) {
			int n = wait_one(0.01, &e, &err);
			if (n == 1) {
				done[(char *) e.op_context - ctx] = 1, completed++;
			} else if (n < 0) {
				EXPECT(0, "send error completion before the victim was killed: %s", fi_strerror(-n));
				done[(char *) err.op_context - ctx] = 1, completed++;
			}
		}
	}
	for (int i = 0; i < LARGE_N; i++)
		EXPECT(!done[i], "large send %d completed before the victim took anything", i);
	printf("survivor: %d large and %d small sends posted, %d complete before the kill\n", LARGE_N, nsmall,
	       completed);
	printf("SENDING\n");
	fflush(stdout);

	double t0 = now(), last = t0;
	while (completed < posted && now() < t0 + KILL_BOUND + 5) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int n = wait_one(0.1, &e, &err);
		if (n == 0)
			continue;
		char *c = n == 1 ? (char *) e.op_context : (char *) err.op_context;
		if (c < ctx || c >= ctx + posted || done[c - ctx]) {
			EXPECT(0, "completion with an unknown or repeated op_context %p", (void *) c);
			continue;
		}
		done[c - ctx] = 1, completed++, last = now();
		if (n == 1) {
			EXPECT(c - ctx >= LARGE_N, "large send %d completed successfully after its receiver was killed",
			       (int) (c - ctx));
			continue;
		}
		errors++;
		if (c - ctx < LARGE_N)
			large_errors++;
		EXPECT(conn_error(err.err), "send error completion err %d (%s), want a connection error like FI_ECONNRESET",
		       err.err, fi_strerror(err.err));
		char text[512];
		const char *s = fi_cq_strerror(cq, err.prov_errno, err.err_data, text, sizeof(text));
		if (s && strstr(s, victim_name) && strlen(s) > strlen(victim_name) + 2)
			named++;
		else if (errors == 1 || c - ctx < LARGE_N)
			printf("survivor: fi_cq_strerror(prov_errno %d) = '%s' does not name the peer %s and a cause\n",
			       err.prov_errno, s ? s : "(null)", victim_name);
		if (errors == 1)
			printf("survivor: first error completion %.3f s after SENDING: %s; fi_cq_strerror: %s\n",
			       now() - t0, fi_strerror(err.err), s ? s : "(null)");
	}
	printf("survivor: %d of %d sends complete, %d as errors (%d of them naming the peer), last %.3f s after "
	       "SENDING\n",
	       completed, posted, errors, named, last - t0);
	EXPECT(completed == posted, "%d sends never completed within %.0f s of the kill", posted - completed,
	       KILL_BOUND + 5);
	EXPECT(large_errors == LARGE_N, "%d of %d large sends ended in an error completion", large_errors, LARGE_N);
	EXPECT(last - t0 <= KILL_BOUND, "the last completion came %.2f s after SENDING, want <= %.0f s", last - t0,
	       KILL_BOUND);
	EXPECT(errors > 0 && named == errors, "%d of %d error completions name the peer in fi_cq_strerror", named,
	       errors);

	/* A peer known dead: a new send fails at once. */
	{
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		double t1 = now();
		ssize_t rc = tsend(small, SMALL, v, 0x300, &ctx[0], 2);
		int n = rc < 0 ? (int) rc : wait_one(2.0, &e, &err);
		EXPECT(n < 0 && rc != -FI_EAGAIN, "a new send to the dead peer: %s after %.2f s, want a failure",
		       n == 0 ? "nothing" : n == 1 ? "success" : fi_strerror(-n), now() - t1);
		if (n < 0 && rc != -FI_EAGAIN)
			printf("survivor: a new send to the dead peer failed after %.3f s: %s\n", now() - t1,
			       fi_strerror(-n));
	}
	close_all();
	return report("survivor");
}

/* The new pair: ping-pongs of 64 B and 1 MiB, payloads checked. */
static int pair(int client)
{
	static char tx[1 << 20], rx[1 << 20];
	static const size_t sizes[] = { 64, 1 << 20 };
	char peer_name[NAME_MAX_LEN];
	double t0 = now();
	fi_addr_t p;
	open_ep();
	if (!client)
		publish("server");
	p = insert(client ? "server" : "client", peer_name);
	if (client)
		publish("client");
	for (int round = 0; round < 20; round++) {
		size_t size = sizes[round % 2];
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		memset(tx, 'a' + round, size);
		memset(rx, 0, size);
		CHECK(fi_trecv(ep, rx, size, NULL, p, 0x400, 0, rx));
		if (client)
			CHECK(tsend(tx, size, p, 0x400, tx, 5));
		int got = 0;
		for (int k = 0; k < (client ? 2 : 1); k++) {
			int n = wait_one(10, &e, &err);
			EXPECT(n == 1, "round %d: %s", round, n == 0 ? "no completion within 10 s" : fi_strerror(-n));
			if (n != 1)
				return report(client ? "client" : "server");
			got += e.op_context == rx;
		}
		if (!client) {
			CHECK(tsend(rx, size, p, 0x400, tx, 5));
			int n = wait_one(10, &e, &err);
			EXPECT(n == 1, "round %d: send: %s", round, n == 0 ? "no completion" : fi_strerror(-n));
		}
		EXPECT(got == 1, "round %d: the receive did not complete", round);
		for (size_t i = 0; i < size; i++)
			if (rx[i] != 'a' + round) {
				EXPECT(0, "round %d (%zu bytes): byte %zu differs", round, size, i);
				break;
			}
		if (client && round == 0) {
			printf("client: first round trip %.3f s after the client started\n", now() - t0);
			EXPECT(now() - t0 <= START_BOUND, "first round trip %.2f s after start, want <= %.0f s", now() - t0,
			       START_BOUND);
		}
	}
	close_all();
	return report(client ? "client" : "server");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: killpeer victim|survivor|server|client DIR\n");
		return 2;
	}
	dir = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "victim")) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		char hello[8], name[NAME_MAX_LEN];
		fi_addr_t s;
		open_ep();
		publish("victim");
		s = insert("survivor", name);
		CHECK(fi_trecv(ep, hello, sizeof(hello), NULL, s, 0x50, 0, hello));
		if (wait_one(20, &e, &err) != 1)
			die("the survivor's hello", -FI_ETIMEDOUT);
		CHECK(tsend("ack", 4, s, 0x51, hello, 10));
		if (wait_one(10, &e, &err) != 1)
			die("the answer to the survivor", -FI_ETIMEDOUT);
		publish("victim-idle");
		printf("READY\n");
		for (;;)
			pause();
	}
	if (!strcmp(argv[1], "survivor"))
		return survivor();
	return pair(!strcmp(argv[1], "client"));
}
