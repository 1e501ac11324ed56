'use strict';
/*
 * S3-compatible server for the mount tests: @20minutes/s3rver (a real HTTP
 * server that checks AWS SigV2/SigV4 signatures and keeps its objects in
 * a directory) on 127.0.0.1, started by tests/servers.sh (s3_start).
 *
 *   node --openssl-legacy-provider s3server.js DATADIR PORTFILE \
 *       [--bucket NAME]... [--raw] [--log] [--keys FILE]
 *
 * --keys FILE: more key pairs besides S3RVER/S3RVER, the temporary
 * credentials a test's credential endpoints hand out (tests/creds/):
 * FILE holds one JSON object a line, {"ak", "sk", "token", "exp"} (exp in
 * Unix seconds, 0: never), appended to while the server runs.  A request
 * signed with one of those keys must carry its token in a signed
 * x-amz-security-token header (else 403 InvalidToken) before it expires
 * (else 400 ExpiredToken), as S3 checks temporary credentials; each
 * accepted request is logged as "cred AK ok" to stderr (the log).
 *
 * Listens on a port the kernel picks and, once it accepts connections,
 * writes that port to PORTFILE (written to a temporary name and renamed,
 * so a reader never sees half of it).  Exits on SIGTERM or SIGINT, and by
 * itself once the process in $PF_PARENT_PID is gone (so a test shell
 * killed with SIGKILL leaves no server behind).
 *
 * The package has no bin/s3rver.js, hence this launcher.
 *
 * Fixes applied unless --raw, each a divergence from S3 that would fail a
 * correct client (see the comments at each):
 *   - listing order: S3 lists keys in byte order; s3rver walks its
 *     directory in file name order, and a key's file is KEY._S3rver_object
 *     and a "directory" has no "/": keys "a", "a-b", "a.c" come as
 *     "a-b", "a.c", "a", and pages (continuation tokens: the last key)
 *     lose keys (max-keys=1 lists "a-b", "a.c", "a0": "a" is lost);
 *   - If-Match / If-Unmodified-Since: S3 answers 412 PreconditionFailed;
 *     s3rver ignores both;
 *   - ranges: "bytes=0-0" gets the whole object (an end of 0 is taken as
 *     "no end"), "bytes=-N" (the last N) gets bytes 0..N, any range of an
 *     empty object gets a broken response (0 bytes, Content-Length 1);
 *   - signatures of bucket requests sent as "/bucket/" (s3fs lists so):
 *     s3rver checks them against the path "/bucket", so every one fails
 *     with SignatureDoesNotMatch; S3 signs the path as sent.
 */
const fs = require('fs');
const path = require('path');

const S3RVER = path.dirname(require.resolve('@20minutes/s3rver/package.json'));

function usage() {
	console.error('usage: node s3server.js DATADIR PORTFILE [--bucket NAME]... [--raw] [--log] [--keys FILE]');
	process.exit(2);
}

const args = process.argv.slice(2);
const buckets = [];
let raw = false;
let log = false;
let keysFile = null;
const pos = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === '--bucket' && i + 1 < args.length)
		buckets.push(args[++i]);
	else if (args[i] === '--raw')
		raw = true;
	else if (args[i] === '--log')
		log = true;
	else if (args[i] === '--keys' && i + 1 < args.length)
		keysFile = args[++i];
	else if (args[i].startsWith('-'))
		usage();
	else
		pos.push(args[i]);
}
if (pos.length !== 2)
	usage();
const [dataDir, portFile] = pos;

const OBJECT_SUFFIX = '._S3rver_object';

/*
 * The name a directory entry sorts by among its siblings: the key part it
 * stands for.  A directory "d" holds the keys "d/...", an object file
 * "n._S3rver_object" is the key "n"; the .md5 and metadata files are not
 * keys (the store skips them) and sort after their object.
 */
function sortName(name, isDir) {
	if (isDir)
		return name + '/';
	if (name.endsWith(OBJECT_SUFFIX))
		return name.slice(0, -OBJECT_SUFFIX.length);
	return name;
}

if (!raw) {
	/*
	 * Must happen before the store module is loaded: it copies walk out
	 * of utils when it loads.  Entries are compared by UTF-16 code units,
	 * which is byte order for the ASCII keys of the tests.
	 */
	const utils = require(path.join(S3RVER, 'lib/utils'));
	utils.walk = function* sortedWalk(dir, recurseFilter) {
		const entries = fs.readdirSync(dir, { withFileTypes: true }).map((e) => ({
			name: e.name,
			isDir: e.isDirectory(),
			key: sortName(e.name, e.isDirectory()),
		}));
		entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
		for (const e of entries) {
			const p = path.posix.join(dir, e.name);
			if (!e.isDir)
				yield p;
			else if (!recurseFilter || recurseFilter(p))
				yield* sortedWalk(p, recurseFilter);
		}
	};

	/*
	 * Ranges the store gets wrong.  "bytes=0-0": the controller passes end
	 * 0, the store reads it as "to the end" and serves the whole object;
	 * serve the one byte.  Any range of an empty object: the store serves
	 * 0 bytes with Content-Length 1; S3 answers 416 InvalidRange (no
	 * content makes the controller say so).
	 */
	const Store = require(path.join(S3RVER, 'lib/stores/filesystem'));
	const getObject = Store.prototype.getObject;
	Store.prototype.getObject = async function (bucket, key, options) {
		const ranged = options && (options.start !== undefined || options.end);
		const object = await getObject.call(this, bucket, key, options);
		if (!object || !ranged || !object.content)
			return object;
		if (object.size === 0) {
			object.content.destroy();
			object.content = null;
		} else if (options.start === 0 && options.end === 0) {
			object.content.destroy();
			object.range = { start: 0, end: 0 };
			object.content = await new Promise((resolve, reject) => {
				const s = fs.createReadStream(this.getResourcePath(bucket, key, 'object'), object.range)
					.on('error', reject)
					.on('open', () => resolve(s));
			});
		}
		return object;
	};
}

/*
 * s3rver makes its continuation tokens with DES; without it every listing
 * that has a next page fails with InternalError.  OpenSSL 3 keeps DES in
 * its legacy provider: node must run with --openssl-legacy-provider.
 */
try {
	require('crypto').createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8));
} catch (err) {
	console.error('s3server: no DES cipher (' + err.message + '): run node with --openssl-legacy-provider');
	process.exit(1);
}

if (!raw) {
	/*
	 * The signature check builds the path it signs from the route's
	 * bucket and key, which loses the "/" of "GET /bucket/".  Its source
	 * gets that "/" back before s3rver loads it (it has no hook for it).
	 */
	const Module = require('module');
	const file = path.join(S3RVER, 'lib/middleware/authentication.js');
	const key = "      if (ctx.params.key) {\n" +
		"        canonicalizedResource += '/' + ctx.params.key;\n" +
		'      }';
	let src = fs.readFileSync(file, 'utf8');
	if (!src.includes(key)) {
		console.error('s3server: ' + file + ' is not the one this launcher patches');
		process.exit(1);
	}
	src = src.replace(key, key + " else if (!ctx.state.vhost && ctx.path.endsWith('/')) {\n" +
		"        canonicalizedResource += '/';\n" +
		'      }');
	const m = new Module(file, module);
	m.filename = file;
	m.paths = Module._nodeModulePaths(path.dirname(file));
	m._compile(src, file);
	m.loaded = true;
	require.cache[file] = m;
}

const S3rver = require(S3RVER);

const server = new S3rver({
	address: '127.0.0.1',
	port: 0,
	directory: dataDir,
	silent: !log,
	vhostBuckets: false,
	configureBuckets: buckets.map((name) => ({ name })),
});

if (!raw) {
	/*
	 * Runs before s3rver's own middleware.  On a GET or HEAD of an object:
	 * a suffix range becomes an explicit one (the size is needed); after
	 * the route ran (so after the signature check), a 200/206 whose ETag
	 * or Last-Modified fails If-Match / If-Unmodified-Since becomes S3's
	 * 412 PreconditionFailed.
	 */
	server.middleware.unshift(async (ctx, next) => {
		const m = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
		const isGet = (ctx.method === 'GET' || ctx.method === 'HEAD') && m;
		const suffix = isGet && /^bytes=-(\d+)$/.exec(ctx.headers.range || '');
		if (suffix) {
			let size = -1;
			try {
				const md = await server.store.getMetadata(m[1], decodeURIComponent(m[2]));
				size = Number(md['content-length']);
			} catch (e) {
				/* no such object: s3rver answers */
			}
			const n = Number(suffix[1]);
			if (size > 0 && n > 0)
				ctx.headers.range = `bytes=${Math.max(0, size - n)}-${size - 1}`;
		}
		await next();
		if (!isGet || (ctx.status !== 200 && ctx.status !== 206))
			return;
		const ifMatch = ctx.headers['if-match'];
		const unmodSince = ctx.headers['if-unmodified-since'];
		const etag = ctx.response.get('ETag');
		const lastMod = new Date(ctx.response.get('Last-Modified'));
		let failed = false;
		if (ifMatch !== undefined) {
			const tags = ifMatch.split(',').map((t) => t.trim());
			failed = !tags.includes('*') && !tags.includes(etag);
		} else if (unmodSince !== undefined) {
			const since = new Date(unmodSince);
			failed = !isNaN(since) && lastMod > since;
		}
		if (!failed)
			return;
		if (ctx.body && typeof ctx.body.destroy === 'function')
			ctx.body.destroy();
		const msg = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
			'<Message>At least one of the pre-conditions you specified did not hold</Message>' +
			`<Condition>${ifMatch !== undefined ? 'If-Match' : 'If-Unmodified-Since'}</Condition></Error>`;
		for (const h of ctx.response.headerSent ? [] : Object.keys(ctx.response.headers))
			if (!/^(x-amz-|access-control-|vary)/i.test(h))
				ctx.remove(h);
		ctx.status = 412;
		ctx.type = 'application/xml';
		ctx.body = ctx.method === 'HEAD' ? null : msg;
	});
}

if (keysFile) {
	const AWSAccount = require(path.join(S3RVER, 'lib/models/account'));
	const s3err = (ctx, status, code, msg) => {
		ctx.status = status;
		ctx.type = 'application/xml';
		ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code +
			'</Code><Message>' + msg + '</Message></Error>';
	};
	server.middleware.unshift(async (ctx, next) => {
		const auth = ctx.headers.authorization || '';
		const m = /Credential=([^/]+)\/[^,]*,\s*SignedHeaders=([^,]+)/.exec(auth);
		if (!m || m[1] === 'S3RVER')
			return next();
		let keys = [];
		try {
			keys = fs.readFileSync(keysFile, 'utf8').split('\n').filter((l) => l.trim())
				.map((l) => JSON.parse(l));
		} catch (e) {
			/* no file yet: no key */
		}
		const k = keys.filter((x) => x.ak === m[1]).pop();
		if (!k) {
			console.error(`cred ${m[1]} unknown`);
			return s3err(ctx, 403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
		}
		const signed = m[2].split(';');
		if (k.token && (ctx.headers['x-amz-security-token'] !== k.token ||
				!signed.includes('x-amz-security-token'))) {
			console.error(`cred ${m[1]} bad-token`);
			return s3err(ctx, 403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
		}
		if (k.exp && Date.now() / 1000 >= k.exp) {
			console.error(`cred ${m[1]} expired`);
			return s3err(ctx, 400, 'ExpiredToken', 'The provided token has expired.');
		}
		if (!AWSAccount.registry.has(k.ak))
			AWSAccount.DUMMY_ACCOUNT.createKeyPair(k.ak, k.sk);
		await next();
		console.error(`cred ${m[1]} ok ${ctx.status}`);
	});
}

function stop(code) {
	server.close().catch(() => {}).finally(() => process.exit(code));
	setTimeout(() => process.exit(code), 1000).unref();
}
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));

const parent = Number(process.env.PF_PARENT_PID || 0);
if (parent > 0) {
	setInterval(() => {
		try {
			process.kill(parent, 0);
		} catch (e) {
			stop(0);
		}
	}, 1000).unref();
}

server.run().then(
	(addr) => {
		fs.writeFileSync(portFile + '.tmp', `${addr.port}\n`);
		fs.renameSync(portFile + '.tmp', portFile);
		console.log(`s3server: listening on 127.0.0.1:${addr.port}, data in ${dataDir}${raw ? ' (raw s3rver)' : ''}`);
	},
	(err) => {
		console.error('s3server: ' + (err && err.stack ? err.stack : err));
		process.exit(1);
	},
);
