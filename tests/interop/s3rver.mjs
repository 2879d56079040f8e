// Starts s3rver (an S3 API server on the local file system) for the S3 FileIO tests:
//   node --openssl-legacy-provider s3rver.mjs <directory> [bucket...]
// (s3rver encrypts ListObjectsV2 continuation tokens with DES, which Node's OpenSSL 3 offers
// only through the legacy provider; without the flag a paginated listing fails with 500)
// listens on 127.0.0.1 with a free port, creates the buckets, prints "port <n>" on stdout and
// runs until SIGTERM or SIGINT. Virtual-host requests work for "<bucket>.s3.localhost:<port>".
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');

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
