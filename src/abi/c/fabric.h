/* Builds an API version number from its major and minor parts. */
#define FI_VERSION(major, minor) (((major) << 16) | (minor))
/* The major part of an API version number. */
#define FI_MAJOR(version) ((version) >> 16)
/* The minor part of an API version number. */
#define FI_MINOR(version) ((version) & 0xFFFF)
/* Version comparisons. */
#define FI_VERSION_GE(v1, v2) ((v1) >= (v2))
#define FI_VERSION_LT(v1, v2) ((v1) < (v2))

/* Checks printf-style format strings of variadic functions. */
#define FI_FORMAT_PRINTF(string, first) \
	__attribute__ ((__format__ (__printf__, (string), (first))))

/* Visibility marker used by provider entry points (nothing needed here). */
#define EXTERNALLY_VISIBLE

/* Deprecation markers. */
#define FI_DEPRECATED_FUNC __attribute__((deprecated))
#define FI_DEPRECATED_FIELD __attribute__((deprecated))

/*
 * True when the ops table `ops` of type `opstype` is large enough to hold
 * member `op` and the member is set: vtables may be shorter than this
 * header's, so late members are checked before use.
 */
#define FI_CHECK_OP(ops, opstype, op) \
	((ops) && ((ops)->size > offsetof(opstype, op)) && (ops)->op)
@@TYPES@@
static inline uint32_t fi_tc_dscp_set(uint8_t dscp)
{
	return ((uint32_t) dscp) | FI_TC_DSCP;
}

static inline uint8_t fi_tc_dscp_get(uint32_t tclass)
{
	return tclass & FI_TC_DSCP ? (uint8_t) tclass : 0;
}

static inline struct fi_info *fi_allocinfo(void)
{
	return fi_dupinfo(NULL);
}

static inline int fi_close(struct fid *fid)
{
	return fid->ops->close(fid);
}

static inline int fi_control(struct fid *fid, int command, void *arg)
{
	return fid->ops->control(fid, command, arg);
}

static inline int fi_alias(struct fid *fid, struct fid **alias_fid, uint64_t flags)
{
	struct fi_alias a;

	a.fid = alias_fid;
	a.flags = flags;
	return fi_control(fid, FI_ALIAS, &a);
}

static inline int fi_get_val(struct fid *fid, int name, void *val)
{
	struct fi_fid_var v;

	v.name = name;
	v.val = val;
	return fi_control(fid, FI_GET_VAL, &v);
}

static inline int fi_set_val(struct fid *fid, int name, void *val)
{
	struct fi_fid_var v;

	v.name = name;
	v.val = val;
	return fi_control(fid, FI_SET_VAL, &v);
}

static inline int fi_open_ops(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return fid->ops->ops_open(fid, name, flags, ops, context);
}

static inline int fi_set_ops(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return FI_CHECK_OP(fid->ops, struct fi_ops, ops_set) ?
		fid->ops->ops_set(fid, name, flags, ops, context) : -FI_ENOSYS;
}

