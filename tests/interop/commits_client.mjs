// Follows skade's commit stream with @grpc/grpc-js + @grpc/proto-loader (another project's
// gRPC stack) and skade's own commits.proto. Prints one JSON object per event on stdout
// ({commit_seq, table_name, operation, snapshot_id, added_records}) and, at the end, one
// {"end": "<how>", "code": <grpc status code or null>} line.
//   node commits_client.mjs --proto FILE --port-file FILE [--after N] [--count N]
//        [--table ns.t]... [--timeout-ms N] [--no-resume]
// The server address is read from --port-file ("host:port") at every (re)connect. When the
// stream ends with UNAVAILABLE (server shutdown) the client reconnects and resumes after the
// last commit_seq it printed, unless --no-resume. Exits 0 after --count events, 1 on timeout
// or error.
import fs from 'node:fs';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const args = { after: 0, count: 0, tables: [], timeoutMs: 30000, resume: true };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => process.argv[++i];
  if (a === '--proto') args.proto = next();
  else if (a === '--port-file') args.portFile = next();
  else if (a === '--after') args.after = Number(next());
  else if (a === '--count') args.count = Number(next());
  else if (a === '--table') args.tables.push(next());
  else if (a === '--timeout-ms') args.timeoutMs = Number(next());
  else if (a === '--no-resume') args.resume = false;
  else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}

const definition = protoLoader.loadSync(args.proto, {
  keepCase: true,
  longs: String,
  defaults: true,
  oneofs: true,
});
const Commits = grpc.loadPackageDefinition(definition).skade.v1.Commits;

let cursor = args.after;
let received = 0;
let client = null;
let call = null;

function finish(how, code) {
  console.log(JSON.stringify({ end: how, code: code ?? null, cursor: String(cursor) }));
  if (call) call.cancel();
  if (client) client.close();
  process.exit(how === 'count' ? 0 : 1);
}

setTimeout(() => finish('timeout', null), args.timeoutMs);

function connect() {
  const address = fs.readFileSync(args.portFile, 'utf8').trim();
  if (client) client.close();
  client = new Commits(address, grpc.credentials.createInsecure());
  call = client.Subscribe({ after_commit_seq: String(cursor), tables: args.tables });
  call.on('data', (m) => {
    const seq = Number(m.commit_seq);
    if (seq <= Number(cursor)) {
      finish(`duplicate ${seq}`, null);
      return;
    }
    cursor = seq;
    received++;
    console.log(
      JSON.stringify({
        commit_seq: seq,
        table_name: m.table_name,
        operation: m.operation,
        snapshot_id: m.snapshot_id ?? null,
        added_records: Number(m.added_records),
      }),
    );
    if (args.count > 0 && received >= args.count) finish('count', 0);
  });
  call.on('error', (e) => {
    if (args.resume && (e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.CANCELLED)) {
      // Server restarting: try again shortly from the last commit_seq seen.
      setTimeout(connect, 200);
      return;
    }
    finish('error', e.code);
  });
  call.on('end', () => {});
}

connect();
