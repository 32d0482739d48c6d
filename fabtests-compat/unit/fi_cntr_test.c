/*
 * fi_cntr_test: counters. add/set/read, adderr/seterr/readerr, fi_cntr_wait
 * reaching its threshold, timing out with -FI_ETIMEDOUT.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct fi_cntr_attr attr;
	struct fid_cntr *c;

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	memset(&attr, 0, sizeof(attr));
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.wait_obj = FI_WAIT_UNSPEC;
	FT_RC(fi_cntr_open(ft_domain, &attr, &c, NULL), 0);
	FT_CHECK(fi_cntr_read(c) == 0, "starts at 0");
	FT_RC(fi_cntr_add(c, 5), 0);
	FT_RC(fi_cntr_set(c, 7), 0);
	FT_CHECK(fi_cntr_read(c) == 7, "read %llu", (unsigned long long) fi_cntr_read(c));
	FT_RC(fi_cntr_adderr(c, 2), 0);
	FT_CHECK(fi_cntr_readerr(c) == 2, "readerr");
	FT_RC(fi_cntr_seterr(c, 0), 0);
	FT_RC(fi_cntr_wait(c, 7, 1000), 0);
	double t = ft_now();
	FT_RC(fi_cntr_wait(c, 8, 50), -FI_ETIMEDOUT);
	FT_CHECK(ft_now() - t >= 0.045, "wait returned before its timeout");
	FT_RC(fi_close(&c->fid), 0);
	ft_close();
	return ft_report("fi_cntr_test");
}
