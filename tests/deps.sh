#!/bin/bash
# Installs the Debian 12 packages that building, testing and the demo need,
# if any is missing.  Quiet and quick when everything is there.
set -eu
# nginx, curl: the HTTP(S) server and client of the object-storage mount
# tests (tests/servers.sh); clang-14 and libclang-rt-14-dev: the listing
# parsers' fuzzers (make fuzz-run); node and npm for their S3 server come from the
# machine image, or tests/s3/install.sh installs Debian's; python3-torch,
# python3-numpy, fio: the example trainers (tests/mount_examples.sh);
# gnuplot-nox, rclone, s3fs: bench/suite.sh and its smoke test
# (tests/mount_suite.sh); libexpat1-dev, libjansson-dev: the parsers of
# the AWS credential sources' answers (src/creds_parse.c); python3-venv:
# the Python package installed with pip into a venv (tests/mount_pip.sh);
# dpkg-dev, lintian: make deb and its check (tests/mount_deb.sh);
# python3-yaml: the Kubernetes examples parsed (tests/mount_container.sh);
# memcached, libmemcached-dev, libssl-dev: the shared cache tier
# (src/sharedcache/) and its tests.
# --bench is accepted for older callers: the list is the same.
PKGS="build-essential pkg-config libfuse3-dev fuse3 liburing-dev
libcurl4-openssl-dev libssl-dev libexpat1-dev libjansson-dev check python3 openssl psmisc procps util-linux
clang-14 libclang-rt-14-dev nginx curl python3-torch python3-numpy fio
gnuplot-nox rclone s3fs python3-venv dpkg-dev lintian python3-yaml
memcached libmemcached-dev libssl-dev"
missing=()
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages: ${missing[*]}" >&2
		echo "run as root, or: sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# another apt (unattended-upgrades on a fresh machine) may hold the
	# lock for a while: wait for it rather than fail
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
# the S3 server of the mount tests (npm ci; instant when installed)
"$(dirname "$0")/s3/install.sh"
