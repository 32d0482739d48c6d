/* Signature of the entry point a loadable provider exports; the core calls
 * it after dlopen() to get the provider's descriptor. */
#define FI_EXT_INI \
	__attribute__((visibility("default"), EXTERNALLY_VISIBLE)) \
	struct fi_provider *fi_prov_ini(void)

/* Typed front ends of fi_param_get, one per fi_param_type. */

static inline int
fi_param_get_str(struct fi_provider *provider, const char *param_name,
		 char **value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_int(struct fi_provider *provider, const char *param_name,
		 int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_bool(struct fi_provider *provider, const char *param_name,
		  int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_size_t(struct fi_provider *provider, const char *param_name,
		    size_t *value)
{
	return fi_param_get(provider, param_name, value);
}
