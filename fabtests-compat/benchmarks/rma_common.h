/*
 * What the fabtests-compat one-sided benchmarks (fi_rma_bw,
 * fi_rma_pingpong) share: the -o operation option, the skip when the
 * provider lacks FI_RMA or FI_ATOMIC, and the registration of the buffer area with its (address, key) swapped with
 * the peer.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef RMA_COMMON_H
#define RMA_COMMON_H

#include "bench_common.h"
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

enum op { OP_WRITE, OP_READ, OP_WRITEDATA, OP_ATOMIC };
static enum op op = OP_WRITE;
static const char *const op_names[] = { "write", "read", "writedata", "atomic" };

struct rkey {
	uint64_t addr, key;
};

static struct fid_mr *rma_mr;
static void *rma_desc;
static struct rkey peer;

/* -o is ours (one of the operations in `allowed`, a bit per enum op);
 * everything else goes to parse_opts. */
static int take_op_option(int argc, char **argv, unsigned allowed)
{
	int out = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			const char *v = argv[++i];
			int found = 0;
			for (int k = 0; k < (int) (sizeof(op_names) / sizeof(op_names[0])); k++)
				if ((allowed & (1u << k)) && !strcmp(v, op_names[k])) {
					op = (enum op) k;
					found = 1;
				}
			if (!found)
				die("-o does not take '%s' here", v);
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	return out;
}

/* The skip convention of fabtests-compat: the provider has no RMA (or,
 * for -o atomic, no atomics). */
static void require_rma(struct bench *b)
{
	uint64_t want = op == OP_ATOMIC ? FI_ATOMIC : FI_RMA;
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int rc;
	if (!h)
		die("fi_allocinfo failed");
	h->caps = want | (b->o.ep_type == FI_EP_RDM ? FI_TAGGED : FI_MSG);
	h->ep_attr->type = b->o.ep_type;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	if (b->o.prov)
		h->fabric_attr->prov_name = strdup(b->o.prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	fi_freeinfo(info);
	if (rc == -FI_ENODATA) {
		printf("SKIP: %s lacks %s\n", b->o.prov ? b->o.prov : "the provider",
		       want == FI_ATOMIC ? "FI_ATOMIC" : "FI_RMA");
		exit(77);
	}
}

/* Registers the whole buffer area for RMA and swaps (address, key) of the
 * receive slots with the peer. */
static void setup_rma(struct bench *b)
{
	size_t total = (b->max_size ? b->max_size : 1) * (1 + b->rx_slots);
	uint64_t mode = (uint64_t) b->info->domain_attr->mr_mode;
	struct rkey mine;
	CHECK(fi_mr_reg(b->domain, b->mem, total, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0xb0, 0,
			&rma_mr, NULL));
	rma_desc = (mode & FI_MR_LOCAL) ? fi_mr_desc(rma_mr) : NULL;
	mine.addr = (mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) b->rx : (uint64_t) (b->rx - b->mem);
	mine.key = fi_mr_key(rma_mr);
	if (mine.key == FI_KEY_NOTAVAIL)
		die("fi_mr_key: FI_KEY_NOTAVAIL");
	if (op == OP_WRITEDATA && b->info->domain_attr->cq_data_size < 8)
		die("writedata needs cq_data_size 8, the domain has %zu", b->info->domain_attr->cq_data_size);
	ctrl_post_recv(b);
	ctrl_send(b, &mine, sizeof(mine));
	ctrl_wait(b, &peer, sizeof(peer));
}

#endif
