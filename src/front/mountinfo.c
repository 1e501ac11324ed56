/*
 * mountinfo.c - the mount on top of a path, from /proc/self/mountinfo
 * (see pf_mountinfo.h).  A line is
 *   36 35 98:0 /root /mnt/point rw,noatime master:1 - fuse.x src rw,...
 * with the device third, the mount point fifth and the type after " - "
 * (the optional fields before it vary in number).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "pf_mountinfo.h"

#define LINE_MAX_BYTES 8192

/* Field @n (0-based, space-separated) of @line, its length in *len. */
static const char *field(const char *line, int n, size_t *len)
{
	const char *p = line;

	for (int i = 0; i < n; i++) {
		p = strchr(p, ' ');
		if (!p)
			return NULL;
		p++;
	}
	*len = strcspn(p, " ");
	return p;
}

static bool octal(char c)
{
	return c >= '0' && c <= '7';
}

/* Is the escaped mount point @esc (@len bytes) the path @mnt? */
static bool same_point(const char *esc, size_t len, const char *mnt)
{
	size_t i = 0;

	while (i < len) {
		char c = esc[i];

		if (c == '\\' && len - i >= 4 && esc[i + 1] >= '0' &&
		    esc[i + 1] <= '3' && octal(esc[i + 2]) &&
		    octal(esc[i + 3])) {
			c = (char)((esc[i + 1] - '0') * 64 +
				   (esc[i + 2] - '0') * 8 + (esc[i + 3] - '0'));
			i += 4;
		} else {
			i++;
		}
		if (*mnt++ != c)
			return false;
	}
	return *mnt == '\0';
}

/* "maj:min" of @len bytes into *@maj, *@min; false if it is not one. */
static bool parse_dev(const char *s, size_t len, unsigned *maj,
		      unsigned *min)
{
	unsigned v[2] = { 0, 0 };
	unsigned k = 0;
	bool digit = false;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == ':' && k == 0 && digit) {
			k = 1;
			digit = false;
		} else if (s[i] >= '0' && s[i] <= '9' && v[k] < 100000000u) {
			v[k] = v[k] * 10 + (unsigned)(s[i] - '0');
			digit = true;
		} else {
			return false;
		}
	}
	if (k != 1 || !digit)
		return false;
	*maj = v[0];
	*min = v[1];
	return true;
}

/* One NUL-terminated line: fill *@mi if it is a mount on @mnt. */
static bool match_line(const char *line, const char *mnt,
		       struct pf_mountinfo *mi)
{
	size_t plen = 0;
	size_t dlen = 0;
	const char *point = field(line, 4, &plen);
	const char *dev = field(line, 2, &dlen);
	const char *sep = strstr(line, " - ");
	struct pf_mountinfo m;
	size_t tlen;

	if (!point || !dev || !sep || !same_point(point, plen, mnt) ||
	    !parse_dev(dev, dlen, &m.maj, &m.min))
		return false;
	tlen = strcspn(sep + 3, " ");
	if (tlen >= sizeof(m.type))
		tlen = sizeof(m.type) - 1;
	memcpy(m.type, sep + 3, tlen);
	m.type[tlen] = '\0';
	*mi = m;
	return true;
}

int pf_mountinfo_find_fd(int fd, const char *mnt, struct pf_mountinfo *mi)
{
	char buf[2 * LINE_MAX_BYTES];
	size_t have = 0;
	bool skipping = false;	/* in a line longer than LINE_MAX_BYTES */
	int found = -ENOENT;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf;
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = '\0';
			if (!skipping && match_line(line, mnt, mi))
				found = 0;
			skipping = false;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have > LINE_MAX_BYTES) {
			/* too long for us: drop it up to its newline */
			have = 0;
			skipping = true;
		}
	}
	return found;
}

int pf_mountinfo_find(const char *mnt, struct pf_mountinfo *mi)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = pf_mountinfo_find_fd(fd, mnt, mi);
	close(fd);
	return ret;
}

bool pf_mountinfo_is_fuse(const struct pf_mountinfo *mi)
{
	return strncmp(mi->type, "fuse", 4) == 0;
}

int pf_mountinfo_fuse_dev(const char *mnt, unsigned *maj, unsigned *min)
{
	struct pf_mountinfo mi;
	int ret = pf_mountinfo_find(mnt, &mi);

	if (ret < 0)
		return ret;
	if (!pf_mountinfo_is_fuse(&mi))
		return -ENOENT;
	*maj = mi.maj;
	*min = mi.min;
	return 0;
}
