/*
 * A counter bound only to a memory region (fi_mr_bind, FI_REMOTE_WRITE)
 * under manual progress: the target never reads a CQ, it waits on that
 * counter alone, as upstream's fi_multi_mr does. Waiting on the counter
 * must drive the domain's endpoints, or the write it counts is never
 * served and the wait times out.
 *
 *   mrcntr PROVIDER [auto]
 *
 * Two RDM endpoints of one domain (pair.h); the writer posts one
 * fi_write into the target's region, then the program waits on the
 * region's counter (never on the target's CQ) with fi_cntr_wait, then
 * reads the writer's completion and checks the bytes. With `auto`, the
 * domain asks for FI_PROGRESS_AUTO instead (nothing to drive then).
 * On Debian's libfabric 1.17 only sockets runs it (its shm cannot bind a
 * counter to a region, its tcp;ofi_rxm has no FI_RMA_EVENT): under manual
 * progress nothing serves the write (the wait times out, the writer's
 * completion never comes); with `auto` the write lands but the region's
 * counter stays at 0 with these registration modes (provider keys,
 * virtual addresses), while its fi_multi_mr (user keys, offsets) passes.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include "check.h"
#include "pair.h"

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "sockets";
	int autop = argc > 2 && !strcmp(argv[2], "auto");
	struct side a, b;
	open_pair(&a, &b, prov, FI_MSG | FI_RMA | FI_RMA_EVENT, autop ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL,
		  FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
	static char target[4096], source[4096];
	memset(source, 0x5a, sizeof(source));
	struct fid_mr *mr;
	CHECK(fi_mr_reg(domain, target, sizeof(target), FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *cntr;
	CHECK(fi_cntr_open(domain, &ca, &cntr, NULL));
	CHECK(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT)
		CHECK(fi_mr_enable(mr));
	uint64_t addr = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t) (uintptr_t) target : 0;
	CHECK(fi_write(a.ep, source, sizeof(source), NULL, a.peer, addr, fi_mr_key(mr), NULL));
	int rc = fi_cntr_wait(cntr, 1, 5000);
	EXPECT(rc == 0, "fi_cntr_wait on the region's counter: %d (%s), want 0", rc, fi_strerror(-rc));
	EXPECT(fi_cntr_read(cntr) == 1, "counter %lu, want 1", (unsigned long) fi_cntr_read(cntr));
	EXPECT(reap(a.cq, 1, "the write's completion") == 0, "the writer's completion");
	EXPECT(memcmp(target, source, sizeof(target)) == 0, "the target's bytes differ from the written ones");
	fi_close(&mr->fid);
	fi_close(&cntr->fid);
	close_pair(&a, &b);
	printf("mrcntr %s %s: %d checks, %d failed\n", prov, autop ? "auto" : "manual", checks, failures);
	return failures ? 1 : 0;
}
