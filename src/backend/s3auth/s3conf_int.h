/*
 * s3conf_int.h - private to the s3:// configuration (s3conf.c, the
 * resolver; s3profile.c, the AWS shared files; s3url.c, the URLs).
 * Callers use pf_s3conf.h.
 */
#ifndef PF_S3CONF_INT_H
#define PF_S3CONF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "pf_s3conf.h"

/* Copies @src whole into @dst, else returns false. */
static inline bool copy_str(char *dst, size_t dstlen, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstlen)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* Where the host starts in "scheme://host[:port]" (validated). */
static inline const char *endpoint_host(const char *ep)
{
	return strstr(ep, "://") + 3;
}

/* An AWS profile's name, from @from: -EINVAL (said in @err) if bad. */
int pf_s3_check_profile_name(const char *name, const char *from, char *err,
			     size_t errlen);

/*
 * Path of an AWS file: $VAR (with "~/" expanded), else ~/.aws/NAME; ""
 * where there is no HOME.  -ENAMETOOLONG (said in @err) if too long.
 */
int pf_s3_aws_path(pf_env_fn env, const char *var, const char *name,
		   char *out, size_t outlen, char *err, size_t errlen);

/* The kind of file pf_s3_ini_scan() reads: see section_is(). */
enum { INI_CRED, INI_CONF, INI_SSO };

/*
 * Reads what file @path (of @kind) says about @profile into @p; a file
 * that does not exist says nothing (returns 0).  See s3profile.c.
 */
int pf_s3_ini_scan(const char *path, int kind, const char *profile,
		   struct pf_aws_profile *p, char *err, size_t errlen);

#endif
