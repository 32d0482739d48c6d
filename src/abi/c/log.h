/* Lets the compiler check fi_log's format string against its arguments. */
void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...) FI_FORMAT_PRINTF(6, 7);

/*
 * Logs a printf-style message when the level/subsystem is enabled for the
 * provider, tagged with the calling function and line. errno is left as it
 * was before the macro ran.
 */
#define FI_LOG(prov, level, subsystem, ...)					\
	do {									\
		if (fi_log_enabled(prov, level, subsystem)) {			\
			int fi_log_errno_ = errno;				\
			fi_log(prov, level, subsystem, __func__, __LINE__,	\
			       __VA_ARGS__);					\
			errno = fi_log_errno_;					\
		}								\
	} while (0)

/* Like FI_LOG, but each call site is rate-limited by fi_log_ready. */
#define FI_LOG_SPARSE(prov, level, subsystem, ...)				\
	do {									\
		static uint64_t fi_log_showtime_;				\
		if (fi_log_ready(prov, level, subsystem,			\
				 &fi_log_showtime_)) {				\
			int fi_log_errno_ = errno;				\
			fi_log(prov, level, subsystem, __func__, __LINE__,	\
			       __VA_ARGS__);					\
			errno = fi_log_errno_;					\
		}								\
	} while (0)

/* Per-level shorthands. */
#define FI_WARN(prov, subsystem, ...)						\
	FI_LOG(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_WARN_SPARSE(prov, subsystem, ...)					\
	FI_LOG_SPARSE(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_TRACE(prov, subsystem, ...)						\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#define FI_INFO(prov, subsystem, ...)						\
	FI_LOG(prov, FI_LOG_INFO, subsystem, __VA_ARGS__)

/* Debug lines exist only when the includer builds with ENABLE_DEBUG set. */
#if defined(ENABLE_DEBUG) && ENABLE_DEBUG
#define FI_DBG(prov, subsystem, ...)						\
	FI_LOG(prov, FI_LOG_DEBUG, subsystem, __VA_ARGS__)
#define FI_DBG_TRACE(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#else
#define FI_DBG(prov_name, subsystem, ...)					\
	do { } while (0)
#define FI_DBG_TRACE(prov, subsystem, ...)					\
	do { } while (0)
#endif

/* Warns at most once per call site (counted only when warnings are on). */
#define FI_WARN_ONCE(prov, subsystem, ...)					\
	do {									\
		static int fi_log_warned_ = 0;					\
		if (!fi_log_warned_ &&						\
		    fi_log_enabled(prov, FI_LOG_WARN, subsystem)) {		\
			int fi_log_errno_ = errno;				\
			fi_log(prov, FI_LOG_WARN, subsystem, __func__,		\
			       __LINE__, __VA_ARGS__);				\
			fi_log_warned_ = 1;					\
			errno = fi_log_errno_;					\
		}								\
	} while (0)
