/*
 * A named (shared) AV's map_addr (fi_av(3)), in fabtests'
 * fi_rdm_shared_av call sequence: the parent opens the AV by name
 * (creating it) and inserts its own endpoint's address; a forked child
 * opens the same name with FI_READ and map_addr NULL, gets map_addr back,
 * reads entry 0 there as an fi_addr_t (the parent's insertion, the value
 * its fi_av_insert returned, not something else at that address), looks
 * it up (the parent's name), and sends to it; the parent receives.
 *
 * Before all that, the name holds what a killed run left behind (a
 * segment with the old header of a table nobody owns any more: once
 * upstream's layout, once an earlier oxifabric build's): the writer's
 * open must not be broken by it, nor share its stale entries.
 *
 * Argument: the provider (sockets by default). Every wait is bounded.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include "check.h"
#include "cqwait.h"

#define COUNT 16
#define MSG "shared av says hello"

static const char *prov = "sockets";
static char av_name[64];

struct res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* Opens everything up to the AV (by name, FI_READ when `reader`). */
static void open_res(struct res *r, int reader, void **map_addr)
{
	struct fi_info *h = fi_allocinfo();
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_SHARED_AV;
	h->mode = FI_CONTEXT;
	h->addr_format = FI_SOCKADDR_IN;
	h->fabric_attr->prov_name = strdup(prov);
	int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, h, &r->info);
	fi_freeinfo(h);
	if (rc)
		die("fi_getinfo", rc);
	struct fi_av_attr ava = { .type = FI_AV_MAP, .count = COUNT, .name = av_name, .flags = reader ? FI_READ : 0 };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	CHECK(fi_av_open(r->domain, &ava, &r->av, NULL));
	*map_addr = ava.map_addr;
	CHECK(fi_cq_open(r->domain, &cqa, &r->cq, NULL));
	CHECK(fi_endpoint(r->domain, r->info, &r->ep, NULL));
	CHECK(fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(r->ep, &r->av->fid, 0));
	CHECK(fi_enable(r->ep));
}

static void close_res(struct res *r)
{
	CHECK(fi_close(&r->ep->fid));
	CHECK(fi_close(&r->cq->fid));
	CHECK(fi_close(&r->av->fid));
	CHECK(fi_close(&r->domain->fid));
	CHECK(fi_close(&r->fabric->fid));
	fi_freeinfo(r->info);
}

/* What a killed run leaves under the name: a 1 MiB segment whose first
 * words are `w0` and `w1` (a table header) and the rest zeros, owned by
 * no one. */
static void leave_stale(uint64_t w0, uint64_t w1)
{
	char path[80];
	snprintf(path, sizeof(path), "/%s", av_name);
	int fd = shm_open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 1 << 20) != 0)
		die("leaving a stale segment", -FI_EIO);
	uint64_t words[2] = { w0, w1 };
	if (pwrite(fd, words, sizeof(words), 0) != (ssize_t) sizeof(words))
		die("writing the stale segment", -FI_EIO);
	close(fd);
}

static int child(int ready, fi_addr_t want)
{
	struct res r;
	void *map = NULL;
	char name[64], peer[64];
	size_t plen = sizeof(peer);
	char buf[64];
	if (read(ready, name, sizeof(name)) <= 0)
		die("waiting for the parent", -FI_EIO);
	open_res(&r, 1, &map);
	EXPECT(map != NULL, "FI_READ open: map_addr not reported");
	if (!map)
		return 1;
	fi_addr_t dest = ((fi_addr_t *) map)[0];
	EXPECT(dest == want, "map_addr[0] is %#llx, the parent's fi_av_insert returned %#llx",
	       (unsigned long long) dest, (unsigned long long) want);
	EXPECT_RC(fi_av_lookup(r.av, dest, peer, &plen), 0);
	snprintf(buf, sizeof(buf), "%s", MSG);
	ssize_t s;
	long tries = 0;
	do
		s = fi_send(r.ep, buf, sizeof(MSG), NULL, dest, buf);
	while (s == -FI_EAGAIN && ++tries < 1000000);
	EXPECT_RC(s, 0);
	if (s == 0) {
		struct fi_cq_msg_entry e;
		int got = cq_wait_one(r.cq, &e);
		EXPECT(got == 1, "child: send completion %d", got);
	}
	close_res(&r);
	return failures ? 1 : 0;
}

static void run_round(const char *left_by, uint64_t w0, uint64_t w1)
{
	int before = failures;
	leave_stale(w0, w1);
	int p[2];
	if (pipe(p))
		die("pipe", -FI_EIO);
	/* The parent's fi_addr is known before it inserts: the first
	 * insertion into a new table (fabtests relies on the same). */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		exit(child(p[0], 0));
	}
	close(p[0]);

	struct res r;
	void *map = NULL;
	char name[64], buf[64] = { 0 };
	size_t len = sizeof(name);
	open_res(&r, 0, &map);
	EXPECT(map != NULL, "map_addr not reported to the creator");
	CHECK(fi_getname(&r.ep->fid, name, &len));
	fi_addr_t me = FI_ADDR_NOTAVAIL;
	EXPECT_RC(fi_av_insert(r.av, name, 1, &me, 0, NULL), 1);
	EXPECT(me == 0, "the first insertion into a fresh table is %#llx, want 0 (nothing stale shared)",
	       (unsigned long long) me);
	if (map)
		EXPECT(((fi_addr_t *) map)[0] == me, "creator: map_addr[0] is %#llx, want %#llx",
		       (unsigned long long) ((fi_addr_t *) map)[0], (unsigned long long) me);
	CHECK(fi_recv(r.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf));
	if (write(p[1], name, len) != (ssize_t) len)
		die("telling the child", -FI_EIO);
	close(p[1]);
	struct fi_cq_msg_entry e;
	int got = cq_wait_one(r.cq, &e);
	EXPECT(got == 1 && !strcmp(buf, MSG), "parent: receive completion %d, data \"%s\"", got, buf);
	int st = 0;
	waitpid(pid, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %#x)", st);
	close_res(&r);
	/* Leave nothing behind, whichever library ran. */
	{
		char path[80];
		snprintf(path, sizeof(path), "/%s", av_name);
		shm_unlink(path);
	}
	printf("%s: stale segment left by %s\n", failures == before ? "ok" : "FAILED", left_by);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		prov = argv[1];
	snprintf(av_name, sizeof(av_name), "oxi-sharedav-%ld", (long) getpid());
	/* Upstream's sockets header (size COUNT, one entry stored), then an
	 * earlier oxifabric build's ("oxiav001", capacity 1024). */
	run_round("upstream's layout", COUNT, 1);
	run_round("an older oxifabric layout", 0x313030766169786fULL, 1024);
	printf("sharedav (%s): %d checks in the parent, %d failed\n", prov, checks, failures);
	return failures ? 1 : 0;
}
