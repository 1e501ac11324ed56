/*
 * s3profile.c - the AWS shared files (~/.aws/credentials, ~/.aws/config):
 * what they say of a profile, for pf_s3_resolve() and for the credential
 * chain (pf_s3_profile_read()).
 *
 * DESIGN: the files are read the way the AWS CLI reads them (Python's
 * configparser); the environment comes through an injected lookup.
 * Secrets go only into the caller's struct pf_aws_profile (the scratch
 * ones are wiped before pf_s3_profile_read() returns; its output is the
 * caller's to wipe) and a line buffer wiped after each file; errors name
 * profiles and files, never values.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "pf_err.h"
#include "s3conf_int.h"

/* Path of an AWS file: $VAR (with "~/" expanded), else ~/.aws/NAME. */
int pf_s3_aws_path(pf_env_fn env, const char *var, const char *name,
		   char *out, size_t outlen, char *err, size_t errlen)
{
	const char *v = pf_s3_env_get(env, var);
	const char *home = pf_s3_env_get(env, "HOME");
	int n;

	out[0] = '\0';
	if (v && strncmp(v, "~/", 2) == 0 && home)
		n = snprintf(out, outlen, "%s/%s", home, v + 2);
	else if (v)
		n = snprintf(out, outlen, "%s", v);
	else if (home)
		n = snprintf(out, outlen, "%s/.aws/%s", home, name);
	else
		return 0;	/* no file at all */
	if (n < 0 || (size_t)n >= outlen) {
		pf_err_set(err, errlen, "path of the AWS %s file is too long",
		       name);
		out[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
		     s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/*
 * Whether section @sect names @profile: in the credentials file
 * (INI_CRED) the section is the name itself; in the config file
 * (INI_CONF) it is "profile NAME", and "default" may also be written
 * bare; an SSO session (INI_SSO) is "sso-session NAME".
 */
static bool section_is(const char *sect, int kind, const char *profile)
{
	const char *word = kind == INI_SSO ? "sso-session" : "profile";
	size_t wl = strlen(word);

	if (kind == INI_CRED)
		return strcmp(sect, profile) == 0;
	if (kind == INI_CONF && strcmp(sect, "default") == 0)
		return strcmp(profile, "default") == 0;
	if (strncmp(sect, word, wl) != 0 ||
	    (sect[wl] != ' ' && sect[wl] != '\t'))
		return false;
	sect += wl;
	while (*sect == ' ' || *sect == '\t')
		sect++;
	return strcmp(sect, profile) == 0;
}

static int store(char *dst, size_t dstlen, const char *val,
		 const char *key, const char *profile, const char *path,
		 char *err, size_t errlen)
{
	if (copy_str(dst, dstlen, val))
		return 0;
	pf_err_set(err, errlen, "%s of AWS profile '%s' in %s is too long "
	       "(%zu bytes, at most %zu)", key, profile, path, strlen(val),
	       dstlen - 1);
	return -ENAMETOOLONG;
}

/* The settings of a profile that the credential chain reads. */
#define PF_PROF_FIELD(name) \
	{ #name, offsetof(struct pf_aws_profile, name), \
	  sizeof(((struct pf_aws_profile *)0)->name) }
static const struct {
	const char *key;
	size_t off;
	size_t size;
} prof_fields[] = {
	PF_PROF_FIELD(role_arn),
	PF_PROF_FIELD(source_profile),
	PF_PROF_FIELD(credential_source),
	PF_PROF_FIELD(credential_process),
	PF_PROF_FIELD(web_identity_token_file),
	PF_PROF_FIELD(role_session_name),
	PF_PROF_FIELD(external_id),
	PF_PROF_FIELD(duration_seconds),
	PF_PROF_FIELD(sso_start_url),
	PF_PROF_FIELD(sso_session),
	PF_PROF_FIELD(sso_account_id),
	PF_PROF_FIELD(sso_role_name),
	PF_PROF_FIELD(sso_region),
};
#define NFIELDS (sizeof(prof_fields) / sizeof(prof_fields[0]))

/* One "key = value" line of the profile's section. */
static int ini_key(struct pf_aws_profile *p, int kind, char *key, char *val,
		   const char *profile, const char *path, char *err,
		   size_t errlen)
{
	if (kind == INI_SSO) {
		/* an [sso-session] gives only these two */
		if (strcasecmp(key, "sso_start_url") == 0)
			return store(p->sso_start_url, sizeof(p->sso_start_url),
				     val, key, profile, path, err, errlen);
		if (strcasecmp(key, "sso_region") == 0)
			return store(p->sso_region, sizeof(p->sso_region), val,
				     key, profile, path, err, errlen);
		return 0;
	}
	if (strcasecmp(key, "aws_access_key_id") == 0)
		return store(p->access_key, sizeof(p->access_key), val, key,
			     profile, path, err, errlen);
	if (strcasecmp(key, "aws_secret_access_key") == 0)
		return store(p->secret_key, sizeof(p->secret_key), val, key,
			     profile, path, err, errlen);
	/* aws_security_token is the older name boto still reads. */
	if (strcasecmp(key, "aws_session_token") == 0 ||
	    (strcasecmp(key, "aws_security_token") == 0 &&
	     !p->session_token[0]))
		return store(p->session_token, sizeof(p->session_token), val,
			     key, profile, path, err, errlen);
	if (kind == INI_CONF && strcasecmp(key, "region") == 0)
		return store(p->region, sizeof(p->region), val, key, profile,
			     path, err, errlen);
	for (size_t i = 0; i < NFIELDS; i++) {
		if (strcasecmp(key, prof_fields[i].key) != 0 || !*val)
			continue;
		if (strcmp(prof_fields[i].key, "role_session_name") &&
		    strcmp(prof_fields[i].key, "external_id") &&
		    strcmp(prof_fields[i].key, "duration_seconds") &&
		    strcmp(prof_fields[i].key, "sso_region") &&
		    strcmp(prof_fields[i].key, "sso_account_id") &&
		    strcmp(prof_fields[i].key, "sso_role_name"))
			p->other_creds = true;
		return store((char *)p + prof_fields[i].off,
			     prof_fields[i].size, val, key, profile, path,
			     err, errlen);
	}
	return 0;
}

/*
 * Reads what file @path says about @profile into @p, with the rules of
 * Python's configparser as the AWS CLI uses it: '#' and ';' start comment
 * lines, '=' or ':' separates a key from its value, keys are
 * case-insensitive, and a line indented deeper than the key before it
 * continues that key's value (the nested "s3 =" settings), so it is no
 * key of its own.  Values are taken whole: an inline '#' is part of them.
 * A file that does not exist says nothing: returns 0.
 */
int pf_s3_ini_scan(const char *path, int kind, const char *profile,
		   struct pf_aws_profile *p, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	size_t key_indent = SIZE_MAX;
	bool in = false;
	FILE *f;
	int ret = 0;

	if (!path[0])
		return 0;
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		ret = -errno;
		pf_err_set(err, errlen, "cannot read %s: %s", path,
		       strerror(-ret));
		return ret;
	}
	for (;;) {
		ssize_t n;
		size_t indent;
		char *s, *eq, *colon;

		errno = 0;
		n = getline(&line, &cap, f);
		if (n < 0) {
			/* A directory opens, then fails here: EISDIR. */
			if (ferror(f)) {
				ret = errno ? -errno : -EIO;
				pf_err_set(err, errlen, "cannot read %s: %s",
					path, strerror(-ret));
			}
			break;
		}
		if (memchr(line, '\0', (size_t)n))
			continue;
		indent = strspn(line, " \t");
		s = trim(line + indent);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *close = strrchr(s, ']');

			key_indent = SIZE_MAX;
			in = false;
			if (!close)
				continue;
			*close = '\0';
			in = section_is(trim(s + 1), kind, profile);
			if (in)
				p->found = true;
			continue;
		}
		if (key_indent != SIZE_MAX && indent > key_indent)
			continue;
		eq = strchr(s, '=');
		colon = strchr(s, ':');
		if (colon && (!eq || colon < eq))
			eq = colon;
		if (!eq)
			continue;
		key_indent = indent;
		if (!in)
			continue;
		*eq = '\0';
		ret = ini_key(p, kind, trim(s), trim(eq + 1), profile, path,
			      err, errlen);
		if (ret < 0)
			break;
	}
	if (line)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
	return ret;
}

int pf_s3_profile_read(pf_env_fn env, const char *profile,
		       struct pf_aws_profile *p, char *err, size_t errlen)
{
	struct pf_aws_profile *pc = NULL, *pg = NULL, *ps = NULL;
	char cred_path[512], conf_path[512];
	int ret;

	memset(p, 0, sizeof(*p));
	if (err && errlen)
		err[0] = '\0';
	ret = pf_s3_check_profile_name(profile, "the chain", err, errlen);
	if (ret < 0)
		return ret;
	pc = calloc(1, sizeof(*pc));
	pg = calloc(1, sizeof(*pg));
	ps = calloc(1, sizeof(*ps));
	if (!pc || !pg || !ps) {
		ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
		goto out;
	}
	ret = pf_s3_aws_path(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials",
		       cred_path, sizeof(cred_path), err, errlen);
	if (ret == 0)
		ret = pf_s3_aws_path(env, "AWS_CONFIG_FILE", "config", conf_path,
			       sizeof(conf_path), err, errlen);
	if (ret == 0)
		ret = pf_s3_ini_scan(cred_path, INI_CRED, profile, pc, err, errlen);
	if (ret == 0)
		ret = pf_s3_ini_scan(conf_path, INI_CONF, profile, pg, err, errlen);
	if (ret < 0)
		goto out;
	if (!pc->found && !pg->found) {
		ret = -ENOENT;
		pf_err_set(err, errlen,
			"AWS profile '%s' not found in %s or %s", profile,
			cred_path[0] ? cred_path : "(none)",
			conf_path[0] ? conf_path : "(none)");
		goto out;
	}
	/* the credentials file wins, as for the AWS CLI */
	if (pc->access_key[0] || pc->secret_key[0]) {
		memcpy(p->access_key, pc->access_key, sizeof(p->access_key));
		memcpy(p->secret_key, pc->secret_key, sizeof(p->secret_key));
		memcpy(p->session_token, pc->session_token,
		       sizeof(p->session_token));
	} else {
		memcpy(p->access_key, pg->access_key, sizeof(p->access_key));
		memcpy(p->secret_key, pg->secret_key, sizeof(p->secret_key));
		memcpy(p->session_token, pg->session_token,
		       sizeof(p->session_token));
	}
	for (size_t i = 0; i < NFIELDS; i++) {
		const char *a = (const char *)pc + prof_fields[i].off;
		const char *b = (const char *)pg + prof_fields[i].off;

		memcpy((char *)p + prof_fields[i].off, *a ? a : b,
		       prof_fields[i].size);
	}
	memcpy(p->region, pg->region, sizeof(p->region));
	p->found = true;
	p->other_creds = pc->other_creds || pg->other_creds;
	snprintf(p->path, sizeof(p->path), "%s",
		 pc->found ? cred_path : conf_path);
	if (p->sso_session[0]) {
		ret = pf_s3_ini_scan(conf_path, INI_SSO, p->sso_session, ps, err,
			       errlen);
		if (ret < 0)
			goto out;
		if (!ps->found) {
			ret = -ENOENT;
			pf_err_set(err, errlen,
				"sso-session '%s' of AWS profile "
				"'%s' not found in %s",
				p->sso_session, profile,
				conf_path[0] ? conf_path : "(none)");
			goto out;
		}
		if (!p->sso_start_url[0])
			memcpy(p->sso_start_url, ps->sso_start_url,
			       sizeof(p->sso_start_url));
		if (!p->sso_region[0])
			memcpy(p->sso_region, ps->sso_region,
			       sizeof(p->sso_region));
	}
	ret = 0;
out:
	if (pc)
		explicit_bzero(pc, sizeof(*pc));
	if (pg)
		explicit_bzero(pg, sizeof(*pg));
	free(pc);
	free(pg);
	free(ps);
	if (ret < 0)
		explicit_bzero(p, sizeof(*p));
	return ret;
}
