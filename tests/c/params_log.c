/*
 * Parameters and logging as providers use them: fi_param_define/get through
 * FI_<PROV>_<NAME>, fi_getparams, and the FI_WARN macro. The mode argument
 * selects what to check; tests/c/t-params-log.sh runs it once per
 * environment because logging settings are read once per process.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include "check.h"

static struct fi_provider demo = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "demo",
};

static void params(void)
{
	char *s = NULL;
	int i = 0, b = 0;
	size_t z = 0;
	struct fi_param *p = NULL;
	int n = 0, seen = 0;

	EXPECT(fi_param_define(&demo, "name", FI_PARAM_STRING, "a %s", "string") == 0, "define string");
	EXPECT(fi_param_define(&demo, "count", FI_PARAM_INT, "an int") == 0, "define int");
	EXPECT(fi_param_define(&demo, "flag", FI_PARAM_BOOL, "a bool") == 0, "define bool");
	EXPECT(fi_param_define(&demo, "size", FI_PARAM_SIZE_T, "a size") == 0, "define size_t");

	unsetenv("FI_DEMO_NAME");
	EXPECT(fi_param_get_str(&demo, "name", &s) == -FI_ENODATA, "unset -> ENODATA");
	EXPECT(fi_param_get_int(&demo, "undefined", &i) == -FI_ENOENT, "undefined -> ENOENT");
	setenv("FI_DEMO_NAME", "hello", 1);
	EXPECT(fi_param_get_str(&demo, "name", &s) == 0 && s && strcmp(s, "hello") == 0, "string value");
	setenv("FI_DEMO_COUNT", "-42", 1);
	EXPECT(fi_param_get_int(&demo, "count", &i) == 0 && i == -42, "int value %d", i);
	setenv("FI_DEMO_SIZE", "1048576", 1);
	EXPECT(fi_param_get_size_t(&demo, "size", &z) == 0 && z == 1048576, "size_t value");
	const char *yes[] = { "1", "on", "true", "yes" }, *no[] = { "0", "off", "false", "no" };
	for (int k = 0; k < 4; k++) {
		setenv("FI_DEMO_FLAG", yes[k], 1);
		EXPECT(fi_param_get_bool(&demo, "flag", &b) == 0 && b == 1, "bool %s", yes[k]);
		setenv("FI_DEMO_FLAG", no[k], 1);
		EXPECT(fi_param_get_bool(&demo, "flag", &b) == 0 && b == 0, "bool %s", no[k]);
	}
	setenv("FI_DEMO_FLAG", "perhaps", 1);
	EXPECT(fi_param_get_bool(&demo, "flag", &b) == -FI_EINVAL, "bad bool text");

	EXPECT(fi_getparams(&p, &n) == 0 && p && n > 0, "fi_getparams");
	for (int k = 0; p && k < n; k++) {
		if (!strcmp(p[k].name, "FI_PROVIDER") || !strcmp(p[k].name, "FI_LOG_LEVEL"))
			seen++;
		if (!strcmp(p[k].name, "FI_DEMO_NAME")) {
			seen++;
			EXPECT(p[k].value && !strcmp(p[k].value, "hello"), "value in fi_getparams");
			EXPECT(p[k].type == FI_PARAM_STRING && !strcmp(p[k].help_string, "demo: a string"),
			       "type and formatted help");
		}
	}
	EXPECT(seen == 3, "FI_PROVIDER, FI_LOG_LEVEL, FI_DEMO_NAME listed (%d)", seen);
	fi_freeparams(p);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "params")) {
		params();
	} else {
		/* Print one warning; the script checks stderr. */
		int expect = argc > 2 ? atoi(argv[2]) : 0;
		EXPECT(fi_log_enabled(&demo, FI_LOG_WARN, FI_LOG_CORE) == expect, "fi_log_enabled");
		FI_WARN(&demo, FI_LOG_CORE, "hello %d\n", 42);
	}
	printf("params_log: %d failures\n", failures);
	return failures ? 1 : 0;
}
