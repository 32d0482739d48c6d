/*
 * fi_wait_test: wait sets. A CQ and a counter opened with FI_WAIT_SET on
 * one set: fi_wait times out with -FI_ETIMEDOUT while both are idle,
 * returns once the counter moves; the set cannot be closed while members
 * remain; fi_trywait agrees.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct fi_wait_attr wattr;
	struct fi_cq_attr cattr;
	struct fi_cntr_attr nattr;
	struct fid_wait *ws;
	struct fid_cq *cq;
	struct fid_cntr *cntr;

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	memset(&wattr, 0, sizeof(wattr));
	wattr.wait_obj = FI_WAIT_UNSPEC;
	FT_RC(fi_wait_open(ft_fabric, &wattr, &ws), 0);
	memset(&cattr, 0, sizeof(cattr));
	cattr.wait_obj = FI_WAIT_SET;
	cattr.wait_set = ws;
	FT_RC(fi_cq_open(ft_domain, &cattr, &cq, NULL), 0);
	memset(&nattr, 0, sizeof(nattr));
	nattr.events = FI_CNTR_EVENTS_COMP;
	nattr.wait_obj = FI_WAIT_SET;
	nattr.wait_set = ws;
	FT_RC(fi_cntr_open(ft_domain, &nattr, &cntr, NULL), 0);
	double t = ft_now();
	FT_RC(fi_wait(ws, 50), -FI_ETIMEDOUT);
	FT_CHECK(ft_now() - t >= 0.045, "fi_wait returned before its timeout");
	struct fid *fids[1] = { &ws->fid };
	FT_RC(fi_trywait(ft_fabric, fids, 1), 0);
	FT_RC(fi_cntr_add(cntr, 1), 0);
	FT_RC(fi_wait(ws, 5000), 0);
	FT_RC(fi_close(&ws->fid), -FI_EBUSY);
	/* A wait-set member without a set is invalid. */
	{
		struct fid_cq *bad;
		cattr.wait_set = NULL;
		FT_RC(fi_cq_open(ft_domain, &cattr, &bad, NULL), -FI_EINVAL);
	}
	FT_RC(fi_close(&cq->fid), 0);
	FT_RC(fi_close(&cntr->fid), 0);
	FT_RC(fi_close(&ws->fid), 0);
	ft_close();
	return ft_report("fi_wait_test");
}
