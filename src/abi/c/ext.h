/* Exports fid for use by another provider through fi_control. */
static inline int
fi_export_fid(struct fid *fid, uint64_t flags,
	      struct fid **expfid, void *context)
{
	struct fi_fid_export request;

	request.fid = expfid;
	request.flags = flags;
	request.context = context;
	return fi_control(fid, FI_EXPORT_FID, &request);
}

/* Imports expfid into fid by binding it. */
static inline int
fi_import_fid(struct fid *fid, struct fid *expfid, uint64_t flags)
{
	return fid->ops->bind(fid, expfid, flags);
}

/* Opens the named library object, imports fid into it, then closes the
 * handle again whatever the import returned. */
static inline int
fi_import(uint32_t version, const char *name, void *attr, size_t attr_len,
	  uint64_t flags, struct fid *fid, void *context)
{
	struct fid *lib_fid;
	int rc;

	rc = fi_open(version, name, attr, attr_len, flags, &lib_fid, context);
	if (rc != FI_SUCCESS)
		return rc;

	rc = fi_import_fid(lib_fid, fid, flags);
	fi_close(lib_fid);
	return rc;
}

/* Replaces the library's logging with the callbacks in log_fid->ops. */
static inline int
fi_import_log(uint32_t version, uint64_t flags, struct fid_logging *log_fid)
{
	log_fid->fid.fclass = FI_CLASS_LOG;
	log_fid->ops->size = sizeof(struct fi_ops_log);
	return fi_import(version, "logging", NULL, 0, flags, &log_fid->fid,
			 log_fid);
}
