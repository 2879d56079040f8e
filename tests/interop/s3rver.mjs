// Starts s3rver (an S3 API server on the local file system) for the S3 FileIO tests:
//   node --openssl-legacy-provider s3rver.mjs <directory> [bucket...]
// (s3rver encrypts ListObjectsV2 continuation tokens with DES, which Node's OpenSSL 3 offers
// only through the legacy provider; without the flag a paginated listing fails with 500)
// listens on 127.0.0.1 with a free port, creates the buckets, prints "port <n>" on stdout and
// runs until SIGTERM or SIGINT. Virtual-host requests work for "<bucket>.s3.localhost:<port>".
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { once } from 'node:events';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');
const FilesystemStore = require('s3rver/lib/stores/filesystem');

// s3rver's file store is not safe for a GET or HEAD beside a PUT of the same key: its
// putObject answers before the object's bytes are in the file (it ends the file's write
// stream without waiting) and writes overlapping PUTs into one file; its getObject reads the
// size and the ETag, then opens the file by name; its ETag and metadata files are rewritten
// in place after the object. Here, per object:
// - a PUT writes a file of its own and waits until it is closed;
// - renaming it over the object and writing its ETag and metadata, reading the ETag, size and
//   metadata, and opening the object for a GET take turns (one lock per object path);
// - a GET reads the inode it opened, whatever is renamed over the name afterwards.
// So a reader sees the old object with its ETag or the whole new one with its own.
const S3Object = require('s3rver/lib/models/object');
const unlockedGetMetadata = FilesystemStore.prototype.getMetadata;
const turns = new Map();  // object path → the promise of its last turn

async function inTurn(objectPath, fn) {
  const previous = turns.get(objectPath) ?? Promise.resolve();
  let done;
  const mine = new Promise((resolve) => {
    done = resolve;
  });
  turns.set(objectPath, mine);
  await previous;
  try {
    return await fn();
  } finally {
    done();
    if (turns.get(objectPath) === mine) turns.delete(objectPath);
  }
}

FilesystemStore.prototype.getMetadata = function getMetadata(bucket, key) {
  return inTurn(this.getResourcePath(bucket, key, 'object'), () => unlockedGetMetadata.call(this, bucket, key));
};

FilesystemStore.prototype.getObject = function getObject(bucket, key, options) {
  const objectPath = this.getResourcePath(bucket, key, 'object');
  return inTurn(objectPath, async () => {
    let metadata;
    try {
      metadata = await unlockedGetMetadata.call(this, bucket, key);
    } catch (err) {
      if (err.code === 'ENOENT') return null;
      throw err;
    }
    const ranged = options !== undefined && (options.start !== undefined || options.end !== undefined);
    const lastByte = Math.max(0, Number(metadata['content-length']) - 1);
    const range = { start: options?.start ?? 0, end: Math.min(options?.end ?? Infinity, lastByte) };
    let content = null;
    if (range.start >= 0 && range.start <= range.end) {
      content = await new Promise((resolve, reject) => {
        const stream = fs.createReadStream(objectPath, range).on('error', reject).on('open', () => resolve(stream));
      });
    }
    const object = new S3Object(bucket, key, content, metadata);
    if (ranged) object.range = range;
    return object;
  });
};

let partials = 0;
FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  await fsp.mkdir(path.dirname(objectPath), { recursive: true });
  const partial = `${objectPath}.${process.pid}-${++partials}.partial`;
  const md5 = crypto.createHash('md5');
  let size = 0;
  const count = new Transform({
    transform(chunk, encoding, callback) {
      md5.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const source = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
  const out = fs.createWriteStream(partial);
  const closed = once(out, 'close');
  closed.catch(() => {});
  try {
    await pipeline(source, count, out);
    await closed;
  } catch (err) {
    await fsp.rm(partial, { force: true });
    throw err;
  }
  const digest = md5.digest('hex');
  await inTurn(objectPath, async () => {
    try {
      await fsp.rename(partial, objectPath);
    } catch (err) {
      await fsp.rm(partial, { force: true });
      throw err;
    }
    await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  });
  return { size, md5: digest };
};

const [directory, ...buckets] = process.argv.slice(2);
if (!directory) {
  console.error('usage: node --openssl-legacy-provider s3rver.mjs <directory> [bucket...]');
  process.exit(2);
}

const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory,
  silent: true,
  serviceEndpoint: 'localhost',
  configureBuckets: buckets.map((name) => ({ name })),
});

const address = await server.run();
process.stdout.write(`port ${address.port}\n`);

let closing = false;
const stop = () => {
  if (closing) return;
  closing = true;
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
  // Keep-alive connections would hold close() open; do not wait for them.
  setTimeout(() => process.exit(0), 1000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// Exit with the test binary even if it died without stopping us.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) stop();
}, 500).unref();
