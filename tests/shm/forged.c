/*
 * The victim of a peer that sends well-formed cells that lie
 * (tests/shm/t-forged.sh): a real shm endpoint that must stay inside its
 * own memory, complete only what it should, and go on working.
 *
 * `forged TESTBIN`: opens an RDM endpoint of shm (FI_MSG, FI_TAGGED,
 * FI_RMA, FI_ATOMIC; manual progress), registers a 4 KiB buffer for
 * remote reads and writes, and starts the forger: TESTBIN (the shm
 * crate's test binary) run as the child role `forger`
 * (providers/shm/src/forge_tests.rs, fork then exec: under valgrind only
 * the victim runs under memcheck), given our address and the buffer's
 * key in its environment. It reads the forger's address from the
 * forger's standard output, posts one tagged receive per forged message
 * that the protocol lets start (their tags below) and two catch-all
 * receives (any tag, and untagged) that nothing may complete, and sends
 * the forger one 256 KiB tagged message (a rendezvous, or chunks through
 * the bounce area with FI_SHM_DISABLE_CMA=1). Then it drives its CQ
 * (bounded): when the forger's honest message arrives it answers
 * TAG_ACK (an inject), when its own send completes TAG_BYE; it ends when
 * the forger has exited.
 *
 * It checks that each receive completes once, as expected (intact bytes,
 * or an error where the forger named memory it does not have), that the
 * catch-alls complete nothing, that its send completes, that the
 * forger's honest one-sided write landed and nothing else changed its
 * buffer, and that the forger exited 0 (its own checks: what the victim
 * answered); it relays the forger's output and prints "victim: N
 * checks, M failed".
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include "../c/check.h"
#include "shm_ep.h"

/* Shared with forge_tests.rs. */
#define TAG_BIG 0xb16
#define TAG_ACK 0xacc
#define TAG_BYE 0xb1e
#define TAG_HONEST 0x100
#define TAG_CUT 0x101
#define TAG_CHUNK_CUT 0x102
#define TAG_RNDV_BAD 0x103
#define TAG_RNDV_ZERO 0x104
#define TAG_RNDV_SPLIT 0x105
#define TAG_INUSE 0x106
#define TAG_RACE 0x107
#define TAG_SWAP_RNDV 0x201
#define TAG_SWAP_FIRST 0x202
#define BIG (256u << 10)
#define MR_LEN 4096
#define MR_KEY 0x5151
/* The whole exchange, under memcheck. */
#define BOUND 100.0

static struct fid_mr *mr;
static unsigned char mrbuf[MR_LEN];
static unsigned char bigbuf[BIG];

/* The receives: tag, the length expected, whether an error completion
 * is expected instead (with cross-memory attach: the forger's ranges
 * name memory it does not have; without, it sends the bytes in cells). */
struct recv {
	uint64_t tag;
	size_t len;
	int err_with_cma;
	const char *what;
	struct fi_context ctx;
	unsigned char buf[BIG];
	int done, failed;
	size_t got;
	uint64_t got_tag;
};

static struct recv recvs[] = {
	{ .tag = TAG_HONEST, .len = 1000, .err_with_cma = 0, .what = "the honest message" },
	{ .tag = TAG_CUT, .len = 100, .err_with_cma = 0, .what = "FIRST of 100 bytes then MORE past them: cut at 100" },
	{ .tag = TAG_CHUNK_CUT, .len = 5000, .err_with_cma = 0, .what = "FIRST of 5000 bytes then a CHUNK past them: cut at 5000" },
	{ .tag = TAG_RNDV_BAD, .len = 8192, .err_with_cma = 1, .what = "a rendezvous from memory the sender does not have" },
	{ .tag = TAG_RNDV_ZERO, .len = 100, .err_with_cma = 0, .what = "a rendezvous with zero-length ranges" },
	{ .tag = TAG_RNDV_SPLIT, .len = BIG, .err_with_cma = 1, .what = "a large rendezvous (shared copy) from memory the sender does not have" },
	{ .tag = TAG_INUSE, .len = 200, .err_with_cma = 0, .what = "a message whose number was reused meanwhile" },
};
#define NRECV (sizeof(recvs) / sizeof(recvs[0]))
/* Two receives for two rendezvous under one number (with cross-memory
 * attach): the first, held by a chunk the forger claimed in its split
 * slot, must complete once (the forger reports its chunk failed; or
 * intact, if it did not win the race for a chunk); the second must be
 * refused while the first waits, so its receive takes nothing. */
#define RACE (4u << 20)
static unsigned char race_buf[2][RACE];
static struct recv race[] = {
	{ .tag = TAG_RACE, .len = RACE, .what = "a rendezvous (zeros) held by the forger's chunk of its split" },
	{ .tag = TAG_RACE, .len = 0, .what = "a rendezvous under the number of one being split: nothing" },
};
/* Posted once the honest message is in, so that the forged cells before
 * it found no receive: a rendezvous, and a FIRST under its number, which
 * must be refused (had it started a message, the two would share one
 * key, and each receive would take the other's message). */
static struct recv late[] = {
	{ .tag = TAG_SWAP_FIRST, .len = 0, .what = "a FIRST under a waiting rendezvous's number: nothing" },
	{ .tag = TAG_SWAP_RNDV, .len = 300, .what = "a waiting rendezvous whose number a FIRST took again" },
};
/* Catch-alls: any tag, untagged. */
static struct fi_context any_ctx[2];
static unsigned char any_buf[2][BIG];
static struct fi_context send_ctx, read_ctx, bigread_ctx;
static unsigned char read_buf[16];
/* More than a cell: asked to be answered through a chunk of the
 * forger's bounce area, which the forger names wrongly. */
static unsigned char bigread_buf[20000];

static unsigned char victim_byte(size_t i)
{
	return (unsigned char) ((i * 131 + 7) % 251);
}

static unsigned char forger_byte(size_t i)
{
	return (unsigned char) ((i * 7 + 1) % 253);
}

static unsigned char mr_byte(size_t i)
{
	return (unsigned char) (i ^ 0x5a);
}

static void open_ep(void)
{
	struct fi_info *hints = shm_hints(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC);
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	shm_open_ep(hints, FI_CQ_FORMAT_TAGGED, 256);
	for (size_t i = 0; i < MR_LEN; i++)
		mrbuf[i] = mr_byte(i);
	CHECK(fi_mr_reg(domain, mrbuf, MR_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, MR_KEY, 0, &mr, NULL));
}

/* Starts the forger with our address and our buffer's key; its standard
 * output comes back on *out. */
static pid_t start_forger(const char *bin, const char *name, int *out)
{
	char key[128];
	int fds[2];
	pid_t pid;
	uint64_t base = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t) (uintptr_t) mrbuf : 0;
	snprintf(key, sizeof(key), "%llu,%llu,%u", (unsigned long long) fi_mr_key(mr),
		 (unsigned long long) base, MR_LEN);
	if (pipe(fds))
		die("pipe", -FI_EIO);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork", -FI_EIO);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		setenv("OXI_SHM_CHILD", "forger", 1);
		setenv("OXI_FORGE_VICTIM", name, 1);
		setenv("OXI_FORGE_MR", key, 1);
		execl(bin, bin, "--exact", "tests::child_process_entry", "--nocapture", "--test-threads=1", "-q",
		      (char *) NULL);
		_exit(127);
	}
	close(fds[1]);
	*out = fds[0];
	return pid;
}

/* Reads the forger's output up to a line starting with `prefix` (within
 * `bound` seconds); what follows it on that line. */
static int forger_line(int fd, const char *prefix, char *rest, size_t cap, double bound)
{
	char line[512];
	size_t n = 0;
	double end = now() + bound;
	while (now() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;
		if (poll(&p, 1, 100) <= 0)
			continue;
		if (read(fd, &c, 1) != 1)
			return 0;
		if (c != '\n') {
			if (n + 1 < sizeof(line))
				line[n++] = c;
			continue;
		}
		line[n] = 0;
		n = 0;
		printf("forger| %s\n", line);
		if (strncmp(line, prefix, strlen(prefix)) == 0) {
			snprintf(rest, cap, "%s", line + strlen(prefix));
			return 1;
		}
	}
	return 0;
}

/* Whether `buf` holds the forger's first `len` bytes. */
static int forger_bytes(const unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != forger_byte(i))
			return 0;
	return 1;
}

static int cma_off(void)
{
	const char *v = getenv("FI_SHM_DISABLE_CMA");
	return v && (strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0);
}

static struct recv *recv_of(void *ctx)
{
	for (size_t i = 0; i < NRECV; i++)
		if (ctx == &recvs[i].ctx)
			return &recvs[i];
	for (size_t i = 0; i < 2; i++) {
		if (ctx == &late[i].ctx)
			return &late[i];
		if (ctx == &race[i].ctx)
			return &race[i];
	}
	return NULL;
}

/* Sends a small tagged message by inject, retrying (bounded) while the
 * provider says -FI_EAGAIN. */
static void tell(fi_addr_t to, uint64_t tag)
{
	static const char word[] = "victim";
	double end = now() + 10;
	ssize_t rc;
	while ((rc = fi_tinject(ep, word, sizeof(word), to, tag)) == -FI_EAGAIN && now() < end) {
		struct fi_cq_tagged_entry e;
		(void) fi_cq_read(cq, &e, 0);
	}
	EXPECT_RC(rc, 0);
}

int main(int argc, char **argv)
{
	char name[256], faddr[256];
	size_t len = sizeof(name);
	int out, status = -1, sent = 0, send_failed = 0, phantoms = 0, acked = 0, byed = 0, reads = 0, reads_failed = 0,
	    bigreads = 0, bigreads_failed = 0;
	pid_t forger;
	fi_addr_t to;
	double end;
	if (argc != 2) {
		fprintf(stderr, "usage: forged TESTBIN\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_ep();
	CHECK(fi_getname(&ep->fid, name, &len));
	printf("victim: %s (cross-memory attach %s)\n", name, cma_off() ? "off" : "on");
	forger = start_forger(argv[1], name, &out);
	if (!forger_line(out, "forger-addr ", faddr, sizeof(faddr), 30))
		die("the forger's address", -FI_ETIMEDOUT);
	if (fi_av_insert(av, faddr, 1, &to, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	for (size_t i = 0; i < NRECV; i++)
		CHECK(fi_trecv(ep, recvs[i].buf, BIG, NULL, FI_ADDR_UNSPEC, recvs[i].tag, 0, &recvs[i].ctx));
	for (size_t i = 0; i < 2; i++)
		CHECK(fi_trecv(ep, race_buf[i], RACE, NULL, FI_ADDR_UNSPEC, race[i].tag, 0, &race[i].ctx));
	CHECK(fi_trecv(ep, any_buf[0], BIG, NULL, FI_ADDR_UNSPEC, 0x100, 0xff, &any_ctx[0]));
	CHECK(fi_recv(ep, any_buf[1], BIG, NULL, FI_ADDR_UNSPEC, &any_ctx[1]));
	for (size_t i = 0; i < BIG; i++)
		bigbuf[i] = victim_byte(i);
	end = now() + BOUND;
	for (;;) {
		ssize_t rc = fi_tsend(ep, bigbuf, BIG, NULL, to, TAG_BIG, &send_ctx);
		if (rc == 0)
			break;
		if (rc != -FI_EAGAIN || now() > end)
			die("fi_tsend", rc);
	}
	/* A read of the forger, which answers it with the wrong length: it
	 * must fail. */
	for (;;) {
		ssize_t rc = fi_read(ep, read_buf, sizeof(read_buf), NULL, to, 0, 0x77, &read_ctx);
		if (rc == 0)
			break;
		if (rc != -FI_EAGAIN || now() > end)
			die("fi_read", rc);
	}

	while (now() < end) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		ssize_t n = fi_cq_read(cq, &e, 1);
		void *ctx = NULL;
		int failed = 0;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1)
				die("fi_cq_readerr", -FI_EIO);
			ctx = err.op_context;
			failed = 1;
			printf("victim: error completion: %s (%s)\n", fi_strerror(err.err),
			       fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		} else if (n == 1) {
			ctx = e.op_context;
		} else if (n != -FI_EAGAIN) {
			die("fi_cq_read", n);
		}
		if (ctx == &read_ctx) {
			reads++;
			reads_failed += failed;
			/* Then a large read (connected by now, so it asks to be
			 * answered through a chunk of the forger's area), which
			 * the forger answers through a chunk its area does not
			 * have: it must fail. */
			ssize_t rc;
			while ((rc = fi_read(ep, bigread_buf, sizeof(bigread_buf), NULL, to, 0, 0x77, &bigread_ctx)) ==
				       -FI_EAGAIN &&
			       now() < end)
				;
			if (rc)
				die("fi_read", rc);
		} else if (ctx == &bigread_ctx) {
			bigreads++;
			bigreads_failed += failed;
		} else if (ctx == &send_ctx) {
			sent++;
			send_failed += failed;
			if (!byed) {
				tell(to, TAG_BYE);
				byed = 1;
			}
		} else if (ctx == &any_ctx[0] || ctx == &any_ctx[1]) {
			phantoms++;
			printf("victim: FAIL a catch-all receive completed (%s, tag %#llx, %zu bytes)\n",
			       failed ? "an error" : "success", (unsigned long long) (failed ? err.tag : e.tag),
			       failed ? err.len : e.len);
		} else if (ctx) {
			struct recv *r = recv_of(ctx);
			EXPECT(r, "a completion of no operation of ours");
			if (r) {
				r->done++;
				r->failed = failed;
				r->got = failed ? 0 : e.len;
				r->got_tag = failed ? 0 : e.tag;
				if (r->tag == TAG_HONEST && !failed && !acked) {
					for (size_t i = 0; i < 2; i++)
						CHECK(fi_trecv(ep, late[i].buf, BIG, NULL, FI_ADDR_UNSPEC, late[i].tag, 0,
							       &late[i].ctx));
					tell(to, TAG_ACK);
					acked = 1;
				}
			}
		}
		if (byed && waitpid(forger, &status, WNOHANG) == forger) {
			forger = 0;
			break;
		}
	}
	if (forger) {
		printf("victim: FAIL the forger did not end within %.0f s\n", BOUND);
		kill(forger, SIGKILL);
		waitpid(forger, &status, 0);
	}
	forger_line(out, "\1", faddr, sizeof(faddr), 1);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forger's checks (its exit status %d)", status);
	EXPECT(sent == 1 && send_failed == 0, "our large send completed once, successfully (%d, %d failed)", sent,
	       send_failed);
	EXPECT(reads == 1 && reads_failed == 1, "our read, answered with the wrong length, failed once (%d, %d failed)",
	       reads, reads_failed);
	EXPECT(bigreads == 1 && bigreads_failed == 1,
	       "our large read, answered through a chunk the forger does not have, failed once (%d, %d failed)", bigreads,
	       bigreads_failed);
	EXPECT(phantoms == 0, "%d catch-all receives completed", phantoms);
	for (size_t i = 0; i < NRECV; i++) {
		struct recv *r = &recvs[i];
		int want_err = r->err_with_cma && !cma_off();
		int intact = !r->failed && r->got == r->len && forger_bytes(r->buf, r->len);
		EXPECT(r->done == 1 && (want_err ? r->failed : intact), "%s (tag %#llx): %d completions, %s, %zu bytes",
		       r->what, (unsigned long long) r->tag, r->done, r->failed ? "an error" : "success", r->got);
	}
	memset(race_buf[1], 0, RACE);
	EXPECT(race[0].done == !cma_off() &&
		       (race[0].failed || !race[0].done || memcmp(race_buf[0], race_buf[1], RACE) == 0),
	       "%s: %d completions (%s)", race[0].what, race[0].done, race[0].failed ? "an error" : "success");
	EXPECT(race[1].done == 0, "%s: %d completions", race[1].what, race[1].done);
	EXPECT(late[0].done == 0, "%s: %d completions (tag %#llx, %zu bytes)", late[0].what, late[0].done,
	       (unsigned long long) late[0].got_tag, late[0].got);
	EXPECT(late[1].done == 1 && !late[1].failed && late[1].got_tag == TAG_SWAP_RNDV && late[1].got == late[1].len &&
		       forger_bytes(late[1].buf, late[1].len),
	       "%s: %d completions (tag %#llx, %zu bytes)", late[1].what, late[1].done,
	       (unsigned long long) late[1].got_tag, late[1].got);
	{
		int mr_ok = memcmp(mrbuf + 128, "FORGEDOK", 8) == 0 && memcmp(mrbuf + 200, "BOUNCEOK", 8) == 0;
		for (size_t i = 0; i < MR_LEN; i++)
			if ((i < 128 || i >= 136) && (i < 200 || i >= 208) && mrbuf[i] != mr_byte(i))
				mr_ok = 0;
		EXPECT(mr_ok, "the registered buffer holds the honest writes and nothing else changed");
	}
	fi_close(&mr->fid);
	shm_close_ep();
	close(out);
	printf("victim: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
