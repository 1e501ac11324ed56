#!/bin/bash
# tests/run: parallel
# The documentation matches the tree (no mount, no FUSE: a mount test by
# name only, so that tests/run runs it):
#   1. docs/design.md's "Source layout" tables name every file under src/
#      and include/ (but build products and the folders' README.md), each
#      once, and no file that is not there: whoever adds, splits or
#      renames a source file updates its row;
#   2. every folder of src/ that holds files has a README.md;
#   3. every docs/*.md is linked from README.md, and README.md is a front
#      page: under 250 lines;
#   4. every relative link of README.md, docs/*.md and src/**/README.md
#      names a file that exists, and an anchor (#...) a heading of it.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1

# --- 1. the source layout ----------------------------------------------------
# the first cell of every table row of the section, when it is one
# `path` under src/ or include/
awk '/^## / { in_layout = ($0 == "## Source layout") }
	in_layout && /^\| `(src|include)\// {
		split($0, c, "|"); cell = c[2]; gsub(/^ +| +$/, "", cell)
		if (cell ~ /^`[^`]+`$/) { gsub(/`/, "", cell); print cell }
		else print "BAD-CELL " cell
	}' docs/design.md >"$WORK/named"
find src include -type f ! -name '*.o' ! -name '*.d' ! -name README.md \
	! -name '*.tmp' | sort >"$WORK/files"
sort "$WORK/named" | uniq -d >"$WORK/twice"
sort -u "$WORK/named" >"$WORK/named.sorted"
comm -23 "$WORK/files" "$WORK/named.sorted" >"$WORK/unnamed"
comm -13 "$WORK/files" "$WORK/named.sorted" >"$WORK/gone"
check "docs/design.md's source layout has rows ($(wc -l <"$WORK/named"))" \
	test "$(wc -l <"$WORK/named")" -gt 50
check "every file under src/ and include/ has a row in docs/design.md's source layout$(
	[ -s "$WORK/unnamed" ] && printf ' (missing: %s)' "$(tr '\n' ' ' <"$WORK/unnamed")")" \
	test ! -s "$WORK/unnamed"
check "every row of the source layout names a file that exists$(
	[ -s "$WORK/gone" ] && printf ' (not there: %s)' "$(tr '\n' ' ' <"$WORK/gone")")" \
	test ! -s "$WORK/gone"
check "no file has two rows$(
	[ -s "$WORK/twice" ] && printf ' (%s)' "$(tr '\n' ' ' <"$WORK/twice")")" \
	test ! -s "$WORK/twice"

# --- 2. a README.md in each folder of src/ -----------------------------------
noreadme=
for d in $(find src -type d | sort); do
	[ -n "$(find "$d" -maxdepth 1 -type f ! -name '*.o' ! -name '*.d')" ] || continue
	[ -f "$d/README.md" ] || noreadme="$noreadme $d"
done
check "every folder of src/ has a README.md${noreadme:+ (not:$noreadme)}" test -z "$noreadme"

# --- 3. README.md: a front page that links every page of docs/ ---------------
lines=$(wc -l <README.md)
check "README.md is under 250 lines ($lines)" test "$lines" -lt 250
unlinked=
for p in docs/*.md; do
	grep -qE "\]\($p(#[^)]*)?\)" README.md || unlinked="$unlinked $p"
done
check "README.md links every docs/*.md${unlinked:+ (not:$unlinked)}" test -z "$unlinked"

# --- 4. relative links and their anchors -------------------------------------
if python3 - README.md docs/*.md $(find src -name README.md | sort) \
	>"$WORK/links" 2>&1 <<'PY'
import os, re, sys

def slug(h):
    # GitHub's anchors: lower case, punctuation and markup but _ and -
    # dropped, spaces to hyphens
    h = h.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")

def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#").strip()))
    return out

bad = []
for doc in sys.argv[1:]:
    text = open(doc, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            bad.append("%s: %s: no such file" % (doc, target))
        elif frag and full.endswith(".md") and frag not in anchors(full):
            bad.append("%s: %s: no such heading" % (doc, target))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
then
	ok "every relative link of README.md, docs/ and src/ names a file and heading that exist"
else
	fail "links to files or headings that do not exist:"
	cat "$WORK/links"
fi

finish
