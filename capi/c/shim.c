/*
 * The parts of libfabric.so.1's C boundary that stable Rust cannot express:
 * the variadic fi_log() and fi_param_define(), and the compat entry points
 * that carry older symbol versions (a .symver directive must sit in the
 * object that defines the symbol). Each one formats or forwards and calls
 * the Rust code in capi/src/entry.rs.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define OXI_EXPORT __attribute__((visibility("default")))

void oxi_log_message(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, const char *func, int line,
		     const char *msg);
int oxi_param_define(const struct fi_provider *provider, const char *name,
		     enum fi_param_type type, const char *help);
int oxi_getinfo_compat(int abi, uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);
struct fi_info *oxi_dupinfo_compat(int abi, const struct fi_info *info);
int oxi_fabric_1_0(const struct fi_fabric_attr *attr,
		   struct fid_fabric **fabric, void *context);

/* Formats into a stack buffer, or a heap one for long text; NULL on failure. */
static char *oxi_vformat(char *stackbuf, size_t size, const char *fmt, va_list ap)
{
	va_list again;
	int n;
	char *heap;

	va_copy(again, ap);
	n = vsnprintf(stackbuf, size, fmt, ap);
	if (n < 0) {
		va_end(again);
		return NULL;
	}
	if ((size_t) n < size) {
		va_end(again);
		return stackbuf;
	}
	heap = malloc((size_t) n + 1);
	if (heap)
		vsnprintf(heap, (size_t) n + 1, fmt, again);
	va_end(again);
	return heap;
}

OXI_EXPORT void fi_log(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, const char *func, int line,
		       const char *fmt, ...)
{
	char buf[1024];
	char *msg;
	va_list ap;

	if (!fmt)
		return;
	va_start(ap, fmt);
	msg = oxi_vformat(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!msg)
		return;
	oxi_log_message(prov, level, subsys, func, line, msg);
	if (msg != buf)
		free(msg);
}

OXI_EXPORT int fi_param_define(const struct fi_provider *provider,
			       const char *param_name, enum fi_param_type type,
			       const char *help_string_fmt, ...)
{
	char buf[1024];
	char *help = NULL;
	va_list ap;
	int ret;

	if (help_string_fmt) {
		va_start(ap, help_string_fmt);
		help = oxi_vformat(buf, sizeof(buf), help_string_fmt, ap);
		va_end(ap);
		if (!help)
			return -FI_ENOMEM;
	}
	ret = oxi_param_define(provider, param_name, type, help);
	if (help && help != buf)
		free(help);
	return ret;
}

/* Compat entry points: old layouts of fi_info (see src/compat.rs and
 * src/abi/layouts.rs); abi is the node's number, 13 for FABRIC_1.3. */
#define OXI_COMPAT_INFO(abi, node)						\
	OXI_EXPORT int fi_getinfo_##abi(uint32_t version, const char *node_,	\
			const char *service, uint64_t flags,			\
			const struct fi_info *hints, struct fi_info **info)	\
	{									\
		return oxi_getinfo_compat(abi, version, node_, service, flags,	\
					  hints, info);				\
	}									\
	__asm__(".symver fi_getinfo_" #abi ",fi_getinfo@" node);		\
	OXI_EXPORT void fi_freeinfo_##abi(struct fi_info *info)		\
	{									\
		fi_freeinfo(info);						\
	}									\
	__asm__(".symver fi_freeinfo_" #abi ",fi_freeinfo@" node);		\
	OXI_EXPORT struct fi_info *fi_dupinfo_##abi(const struct fi_info *info) \
	{									\
		return oxi_dupinfo_compat(abi, info);				\
	}									\
	__asm__(".symver fi_dupinfo_" #abi ",fi_dupinfo@" node);

OXI_COMPAT_INFO(10, "FABRIC_1.0")
OXI_COMPAT_INFO(11, "FABRIC_1.1")
OXI_COMPAT_INFO(12, "FABRIC_1.2")
OXI_COMPAT_INFO(13, "FABRIC_1.3")
OXI_COMPAT_INFO(17, "FABRIC_1.7")
OXI_COMPAT_INFO(18, "FABRIC_1.8")

OXI_EXPORT int fi_fabric_10(struct fi_fabric_attr *attr,
			    struct fid_fabric **fabric, void *context)
{
	return oxi_fabric_1_0(attr, fabric, context);
}
__asm__(".symver fi_fabric_10,fi_fabric@FABRIC_1.0");
