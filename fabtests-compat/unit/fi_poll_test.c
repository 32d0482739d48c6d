/*
 * fi_poll_test: poll sets. A set holding a CQ and a counter reports nothing
 * while both are idle, reports the counter's context once it moves, and
 * keeps its members from being closed until they are removed.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct fi_poll_attr pattr = { 0 };
	struct fi_cq_attr cattr;
	struct fi_cntr_attr nattr;
	struct fid_poll *ps;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	void *ctx[4];
	int cq_ctx, cntr_ctx;

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	memset(&cattr, 0, sizeof(cattr));
	memset(&nattr, 0, sizeof(nattr));
	nattr.events = FI_CNTR_EVENTS_COMP;
	FT_RC(fi_poll_open(ft_domain, &pattr, &ps), 0);
	FT_RC(fi_cq_open(ft_domain, &cattr, &cq, &cq_ctx), 0);
	FT_RC(fi_cntr_open(ft_domain, &nattr, &cntr, &cntr_ctx), 0);
	FT_RC(fi_poll_add(ps, &cq->fid, 0), 0);
	FT_RC(fi_poll_add(ps, &cntr->fid, 0), 0);
	FT_RC(fi_poll(ps, ctx, 4), 0);
	FT_RC(fi_cntr_add(cntr, 1), 0);
	FT_RC(fi_poll(ps, ctx, 4), 1);
	FT_CHECK(ctx[0] == &cntr_ctx, "the counter's context is reported");
	FT_RC(fi_poll(ps, ctx, 4), 0);
	FT_RC(fi_close(&cq->fid), -FI_EBUSY);
	FT_RC(fi_poll_del(ps, &cq->fid, 0), 0);
	FT_RC(fi_poll_del(ps, &cq->fid, 0), -FI_EINVAL);
	FT_RC(fi_close(&cq->fid), 0);
	FT_RC(fi_close(&ps->fid), 0);
	FT_RC(fi_close(&cntr->fid), 0);
	ft_close();
	return ft_report("fi_poll_test");
}
