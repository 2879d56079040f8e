// Runs one SQL query against a live Flight SQL server with the Node.js client
// (flightsql_client.mjs: grpc-js, proto-loader, apache-arrow) and prints the rows as one JSON
// array of arrays (values as strings, null as null); with --update the statement goes as
// CommandStatementUpdate and the row count is printed as [["N"]].
//   node flightsql_query.mjs --address HOST:PORT --proto-dir DIR --sql "SELECT …" [--update 1]
import { FlightSqlClient } from './flightsql_client.mjs';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const client = FlightSqlClient.connect({ address: args.address, protoDir: args['proto-dir'] });
try {
  if (args.update) {
    console.log(JSON.stringify([[String(await client.executeUpdate(args.sql))]]));
    process.exit(0);
  }
  const { table } = await client.query('CommandStatementQuery', { query: args.sql });
  const rows = [];
  for (let i = 0; i < table.numRows; i++) {
    rows.push(table.schema.fields.map((f) => {
      const v = table.getChild(f.name).get(i);
      return v === null || v === undefined ? null : String(v);
    }));
  }
  console.log(JSON.stringify(rows));
} catch (e) {
  console.error(`query failed: ${e.details ?? e.message}`);
  process.exit(1);
}
process.exit(0);
