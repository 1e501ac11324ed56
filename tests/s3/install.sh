#!/bin/bash
# Installs the S3-compatible test server (@20minutes/s3rver, pinned in
# package-lock.json) into tests/s3/node_modules with `npm ci`.  Quick and
# silent when the installed tree matches package-lock.json (a stamp file
# holds the lock file's hash).  Needs Node.js >= 20 and npm: the machine
# image has Node 20 (NodeSource build); where there is no node at all,
# Debian's nodejs and npm are installed (Debian 12's Node 18 is older than
# the package asks for: the install then stops with a message).
set -eu
cd "$(dirname "$0")"
stamp=node_modules/.prefetchfs-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -f node_modules/@20minutes/s3rver/package.json ]; then
	exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "tests/s3/install.sh: node and npm are missing: run as root, or: sudo apt-get install -y nodejs npm" >&2
		exit 1
	fi
	echo "installing: nodejs npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "tests/s3/install.sh: node $(node --version) is too old: @20minutes/s3rver 4.0.4 needs node >= 20" >&2
	exit 1
fi
echo "installing the S3 test server (npm ci in tests/s3)"
rm -rf node_modules
npm ci --no-audit --no-fund --loglevel=error >/dev/null
echo "$want" >"$stamp"
