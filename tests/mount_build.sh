#!/bin/bash
# What a new user meets before the first mount (issue 31):
#  1. a build package missing (a pkg-config package: libfuse3-dev hidden
#     from pkg-config by PKG_CONFIG_LIBDIR; check for the Check suites;
#     pkg-config itself): make stops with ONE line naming the Debian
#     package to install, not pkg-config's output once per flag; goals
#     that build nothing (clean) still work;
#  2. docs/packaging.md names every Debian package the Makefile asks for
#     in its list of the minimal build packages, and tests/deps.sh and
#     .ci/run install each;
#  3. every example with a #! line can be run (its run bit, in the tree
#     and in git).
# make -n only: nothing is built or written in the tree.
# tests/run: parallel
. "$(dirname "$0")/lib.sh"

# ---- pkg-config failures -----------------------------------------------------------
PC=$WORK/pc
mkdir -p "$PC"
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
	for f in "$d"/*.pc; do
		[ -e "$f" ] && ln -sf "$f" "$PC/"
	done
done
FUSE_PC=$(readlink "$PC/fuse3.pc")
JANSSON_PC=$(readlink "$PC/jansson.pc")
rm -f "$PC/fuse3.pc"

# one_line_make WHAT WANT MAKE-ARGS...: make -n fails with one line that
# names WANT
one_line_make() {
	local what=$1 want=$2
	shift 2
	make -C "$TOP" --no-print-directory -n "$@" >"$WORK/make.out" 2>&1
	local rc=$?
	check "$what: make fails (exit $rc)" test $rc -ne 0
	check "$what: one line naming $want: $(head -3 "$WORK/make.out")" \
		bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -qw -- "$2" "$1" &&
			grep -q "apt-get install" "$1"' _ "$WORK/make.out" "$want"
}
export PKG_CONFIG_LIBDIR=$PC
one_line_make "no fuse3.pc, make prefetchfs" libfuse3-dev prefetchfs
one_line_make "no fuse3.pc, make (all)" libfuse3-dev
rm -f "$PC/check.pc" "$PC/jansson.pc"
one_line_make "no fuse3.pc, jansson.pc, check.pc, make tests" \
	"libfuse3-dev libjansson-dev check" tests
ln -sf "$FUSE_PC" "$JANSSON_PC" "$PC/"
one_line_make "no check.pc, make tests" check tests
check "no check.pc, make tests: names nothing else" \
	bash -c '! grep -qE "libfuse3-dev|libjansson-dev" "$1"' _ "$WORK/make.out"
make -C "$TOP" --no-print-directory -n prefetchfs >"$WORK/make.out" 2>&1
check "no check.pc: make prefetchfs does not need it" test $? -eq 0
rm -f "$PC/fuse3.pc"
make -C "$TOP" --no-print-directory -n clean >"$WORK/make.out" 2>&1
check "no fuse3.pc: make clean still runs" test $? -eq 0
unset PKG_CONFIG_LIBDIR
one_line_make "no pkg-config" pkg-config prefetchfs PKG_CONFIG="$WORK/none/pkg-config"

# ---- the minimal build packages -------------------------------------------------------
# the Debian packages of the Makefile's PC_BUILD (name:package pairs)
PKGS=$(make -C "$TOP" --no-print-directory -s -n -p 2>/dev/null |
	sed -n 's/^PC_BUILD := //p' | tr ' ' '\n' | sed -n 's/^[^:]*://p')
check "the Makefile names its build packages ($(echo $PKGS))" test -n "$PKGS"
DOC=$TOP/docs/packaging.md
if [ -f "$DOC" ]; then
	# the one line of docs/packaging.md that installs them
	line=$(grep -E '^ *(sudo )?apt(-get)? install .*libfuse3-dev' "$DOC" | head -1)
	missing=
	for p in build-essential pkg-config $PKGS; do
		grep -qw -- "$p" <<<"$line" || missing="$missing $p"
	done
	check "docs/packaging.md's build line names each${missing:+ (not:$missing)}: $line" \
		test -n "$line" -a -z "$missing"
	notci=
	for p in $PKGS; do
		grep -qw -- "$p" "$TOP/tests/deps.sh" && grep -qw -- "$p" "$TOP/.ci/run" ||
			notci="$notci $p"
	done
	check "tests/deps.sh and .ci/run install each${notci:+ (not:$notci)}" test -z "$notci"
else
	fail "docs/packaging.md is missing"
fi

# ---- examples with a #! line can be run ------------------------------------------------
noexec=
for f in "$TOP"/examples/*.py "$TOP"/examples/*/*.py; do
	[ -f "$f" ] || continue
	[ "$(head -c 2 "$f")" = '#!' ] || continue
	rel=${f#"$TOP"/}
	if [ ! -x "$f" ]; then
		noexec="$noexec $rel"
	elif git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1 &&
		git -C "$TOP" ls-files --error-unmatch "$rel" >/dev/null 2>&1 &&
		[ "$(git -C "$TOP" ls-files -s "$rel" | cut -c1-6)" != 100755 ]; then
		noexec="$noexec $rel(git)"
	fi
done
check "examples with a #! line have their run bit${noexec:+ (not:$noexec)}" test -z "$noexec"
check "examples/simple_trainer.py --help runs as a program" quiet "$TOP/examples/simple_trainer.py" --help

finish
