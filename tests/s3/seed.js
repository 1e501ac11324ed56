'use strict';
/*
 * Puts a directory tree into a bucket of a running (or stopped) s3server.js
 * through s3rver's own store, fast: thousands of keys or 64 MiB objects in
 * about the time it takes to copy them.  Used by s3_put_tree in
 * tests/servers.sh.
 *
 *   node seed.js DATADIR BUCKET PREFIX DIR
 *
 * Every regular file DIR/a/b becomes the key PREFIX + "a/b" (PREFIX is
 * used as given: "p/" gives "p/a/b").  The store's putObject (or, for
 * small files, the same files it writes) stores the object, its MD5 (the
 * ETag the server sends) and its metadata exactly as a PUT through the
 * server would; size and Last-Modified come from the stored file.  The
 * bucket must exist.  Prints the number of objects and bytes.
 */
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const S3RVER = path.dirname(require.resolve('@20minutes/s3rver/package.json'));
const Store = require(path.join(S3RVER, 'lib/stores/filesystem'));
const S3Object = require(path.join(S3RVER, 'lib/models/object'));

/* enough to keep both cores busy hashing without thousands of open files */
const CONCURRENCY = 16;
/* files up to this size are written synchronously (see below) */
const SMALL = 1 << 20;
const METADATA = { 'content-type': 'application/octet-stream' };

async function main() {
	const [dataDir, bucket, prefix, dir] = process.argv.slice(2);
	if (dir === undefined) {
		console.error('usage: node seed.js DATADIR BUCKET PREFIX DIR');
		process.exit(2);
	}
	const store = new Store(dataDir);
	if (!(await store.getBucket(bucket))) {
		console.error(`seed.js: no bucket ${bucket} in ${dataDir}`);
		process.exit(1);
	}
	const files = [];
	(function walk(rel) {
		for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
			const r = rel ? rel + '/' + e.name : e.name;
			if (e.isDirectory())
				walk(r);
			else if (e.isFile())
				files.push(r);
		}
	})('');
	let next = 0;
	let bytes = 0;
	/*
	 * Small files are written at once, in the store's own layout (its
	 * paths, and the MD5 and metadata files putObject writes): through
	 * the asynchronous store each costs ~1 ms of thread-pool round trips,
	 * which is seconds for a few thousand keys.
	 */
	const made = new Set();
	for (const rel of files) {
		const src = path.join(dir, rel);
		if (fs.statSync(src).size > SMALL)
			continue;
		const key = prefix + rel;
		const data = fs.readFileSync(src);
		const objectPath = store.getResourcePath(bucket, key, 'object');
		const parent = path.dirname(objectPath);
		if (!made.has(parent)) {
			fs.mkdirSync(parent, { recursive: true });
			made.add(parent);
		}
		fs.writeFileSync(objectPath, data);
		fs.writeFileSync(store.getResourcePath(bucket, key, 'object.md5'),
			crypto.createHash('md5').update(data).digest('hex'));
		fs.writeFileSync(store.getResourcePath(bucket, key, 'metadata.json'),
			JSON.stringify(METADATA, null, 2));
		bytes += data.length;
	}
	async function worker() {
		while (next < files.length) {
			const rel = files[next++];
			if (fs.statSync(path.join(dir, rel)).size <= SMALL)
				continue;
			const object = new S3Object(bucket, prefix + rel,
				fs.createReadStream(path.join(dir, rel)),
				METADATA);
			const { size } = await store.putObject(object);
			bytes += size;
		}
	}
	await Promise.all(Array.from({ length: CONCURRENCY }, worker));
	console.log(`${files.length} objects, ${bytes} bytes`);
}

main().catch((err) => {
	console.error('seed.js: ' + (err && err.stack ? err.stack : err));
	process.exit(1);
});
