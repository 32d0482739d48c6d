/*
 * One-sided operations to a shm peer that dies: each ends in an error
 * completion naming the peer, within a bounded time, and a later write to
 * it fails too. Roles (tests/c/t-shm-rma-kill.sh starts one process
 * each):
 *
 *   shmrmakill target <service>
 *       registers 1 MiB (key 7, remote read and write), receives one
 *       message, prints STOPPED and then never drives its endpoint again,
 *       so nothing sent to it is answered; it is killed with -9.
 *   shmrmakill initiator <service>
 *       writes 64 bytes (answered), sends the message, then posts an RMA write, an RMA read and a fetching atomic to the
 *       target, prints SENDING, then expects three error completions with
 *       their own contexts within 10 s, each with an fi_cq_strerror text
 *       that names the peer ("fi_shm://..."), and no success; a write
 *       posted afterwards fails within 2 s (at posting or as an error
 *       completion).
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
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "side.h"

#define REGION (1u << 20)
#define KEY 7

static struct side me;
static char *buf;

static void open_ep(const char *service, int source)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = 0; /* offsets from 0, keys we choose */
	open_side_as(&me, hints, NULL, service, source ? FI_SOURCE : 0, ca);
	fi_freeinfo(hints);
	buf = calloc(1, REGION);
	if (!buf)
		die("calloc", -FI_ENOMEM);
}

/* The next completion within `secs`: 1 success, -1 error (in *err), 0 none. */
static int next(double secs, struct fi_cq_err_entry *err, void **ctx)
{
	double end = now() + secs;
	struct fi_cq_entry e;
	while (now() < end) {
		ssize_t n = fi_cq_read(me.cq, &e, 1);
		if (n == 1) {
			*ctx = e.op_context;
			return 1;
		}
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			CHECK(fi_cq_readerr(me.cq, err, 0) == 1 ? 0 : -FI_EOTHER);
			*ctx = err->op_context;
			return -1;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read", n);
	}
	return 0;
}

static int target(const char *service)
{
	struct fid_mr *mr;
	struct fi_cq_err_entry err;
	void *ctx;
	open_ep(service, 1);
	CHECK(fi_mr_reg(me.domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, KEY, 0, &mr, NULL));
	CHECK(fi_recv(me.ep, buf, 64, NULL, FI_ADDR_UNSPEC, buf));
	printf("READY\n");
	fflush(stdout);
	if (next(20, &err, &ctx) != 1)
		die("the initiator's message", -FI_ETIMEDOUT);
	printf("STOPPED\n");
	fflush(stdout);
	sleep(60); /* killed before this ends */
	return 0;
}

static int initiator(const char *service)
{
	static char ctx_first, ctx_msg, ctx_write, ctx_read, ctx_atomic, ctx_late;
	struct fi_cq_err_entry err;
	fi_addr_t peer;
	uint64_t one = 1, old = 0;
	void *ctx;
	int errors = 0, seen[3] = { 0 };
	open_ep(service, 0);
	if (fi_av_insert(me.av, me.info->dest_addr, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	/* A first write the target answers (after it, large parts name our
	 * buffers: cross-memory attach where the kernel allows it). */
	CHECK(fi_write(me.ep, buf, 64, NULL, peer, 0, KEY, &ctx_first));
	if (next(20, &err, &ctx) != 1 || ctx != &ctx_first)
		die("the first write's completion", -FI_ETIMEDOUT);
	CHECK(fi_send(me.ep, "hello", 6, NULL, peer, &ctx_msg));
	if (next(20, &err, &ctx) != 1 || ctx != &ctx_msg)
		die("the message's completion", -FI_ETIMEDOUT);
	/* Let the target see it and stop. */
	sleep(1);
	CHECK(fi_write(me.ep, buf, 256 << 10, NULL, peer, 0, KEY, &ctx_write));
	CHECK(fi_read(me.ep, buf + (512 << 10), 64 << 10, NULL, peer, 0, KEY, &ctx_read));
	CHECK(fi_fetch_atomic(me.ep, &one, 1, NULL, &old, NULL, peer, 0, KEY, FI_UINT64, FI_SUM, &ctx_atomic));
	printf("SENDING\n");
	fflush(stdout);
	double start = now();
	while (errors < 3) {
		int r = next(10 - (now() - start), &err, &ctx);
		if (r == 0)
			break;
		EXPECT(r < 0, "an operation to the dead peer completed successfully");
		if (r > 0)
			continue;
		errors++;
		const char *text = fi_cq_strerror(me.cq, err.prov_errno, err.err_data, NULL, 0);
		EXPECT(err.err != 0, "error entry without an error code");
		EXPECT(text && strstr(text, "fi_shm://"), "fi_cq_strerror does not name the peer: %s",
		       text ? text : "(null)");
		int i = ctx == &ctx_write ? 0 : ctx == &ctx_read ? 1 : ctx == &ctx_atomic ? 2 : -1;
		EXPECT(i >= 0 && !seen[i], "error entry with context %p", ctx);
		if (i >= 0)
			seen[i] = 1;
		printf("initiator: %s (%d): %s\n", fi_strerror(err.err), err.err, text ? text : "");
	}
	EXPECT(errors == 3, "%d error completions within 10 s, want 3", errors);
	printf("initiator: 3 errors after %.3f s\n", now() - start);
	/* A later write fails at once (posting) or soon (completion). */
	ssize_t rc = fi_write(me.ep, buf, 64, NULL, peer, 0, KEY, &ctx_late);
	if (rc == 0) {
		int r = next(2, &err, &ctx);
		EXPECT(r < 0 && ctx == &ctx_late, "a write to the dead peer did not fail within 2 s (%d)", r);
	} else {
		EXPECT(rc < 0 && rc != -FI_EAGAIN, "a write to the dead peer: %zd", rc);
	}
	printf("initiator: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "target"))
		return target(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "initiator"))
		return initiator(argv[2]);
	fprintf(stderr, "usage: %s target|initiator SERVICE\n", argv[0]);
	return 2;
}
