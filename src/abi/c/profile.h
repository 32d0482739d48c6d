@@TYPES@@
static inline void fi_profile_reset(struct fid_profile *prof_fid, uint64_t flags)
{
	prof_fid->ops->reset(prof_fid, flags);
}

static inline ssize_t fi_profile_query_vars(struct fid_profile *prof_fid,
					    struct fi_profile_desc *varlist, size_t *count)
{
	return prof_fid->ops->query_vars(prof_fid, varlist, count);
}

static inline ssize_t fi_profile_query_events(struct fid_profile *prof_fid,
					      struct fi_profile_desc *eventlist, size_t *count)
{
	return prof_fid->ops->query_events(prof_fid, eventlist, count);
}

/* Reads a 64-bit variable: 0 on success, else the negative error. */
static inline ssize_t fi_profile_read_u64(struct fid_profile *prof_fid, uint32_t var_id,
					  uint64_t *data)
{
	size_t size = sizeof(*data);
	ssize_t ret = prof_fid->ops->read_var(prof_fid, var_id, data, &size);

	return ret > 0 ? 0 : ret;
}

static inline int fi_profile_register_callback(struct fid_profile *prof_fid, uint32_t event_id,
		int (*callback)(struct fid_profile *prof_fid, struct fi_profile_desc *event,
				void *param, size_t size, void *context),
		void *context)
{
	return prof_fid->ops->reg_callback(prof_fid, event_id, callback, context);
}

static inline void fi_profile_start_reads(struct fid_profile *prof_fid, uint64_t flags)
{
	prof_fid->ops->start_reads(prof_fid, flags);
}

static inline void fi_profile_end_reads(struct fid_profile *prof_fid, uint64_t flags)
{
	prof_fid->ops->end_reads(prof_fid, flags);
}

/*
 * Opens the profiling interface of an object: its "fi_profile_ops" ops,
 * which sit in a struct fid_profile right after its fid.
 */
static inline int fi_profile_open(struct fid *fid, uint64_t flags,
				  struct fid_profile **prof_fid, void *context)
{
	struct fi_profile_ops *ops;
	int ret = fi_open_ops(fid, "fi_profile_ops", flags, (void **) &ops, context);

	if (!ret)
		*prof_fid = (struct fid_profile *)
			((char *) ops - offsetof(struct fid_profile, ops));
	return ret;
}

static inline int fi_profile_close(struct fid_profile *prof_fid)
{
	return prof_fid->fid.ops->close(&prof_fid->fid);
}
