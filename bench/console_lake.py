#!/usr/bin/env python3
"""A large lake for console_bench.mjs: TABLES tables in namespace `bench` and one table,
bench.history, of SNAPSHOTS snapshots, made in seconds rather than by one CLI call per table or
per commit.

The CLI makes the two tables whose files are real (bench.t00000 and bench.history, one append of
1,000 rows each). Then this script writes the rest as metadata only, the way a catalog would:
  - bench.t00001 ... each a copy of bench.t00000's metadata file (its own uuid and location, the
    same snapshot and so the same manifest list and data file), registered by inserting its row
    into the SQLite catalog's iceberg_tables (the Iceberg JDBC catalog's table) and
    skade_table_locations;
  - bench.history: SNAPSHOTS - 1 appends before its real snapshot, each a snapshot with its own
    id, sequence number, timestamp (one second apart) and summary, all naming the real snapshot's
    manifest list (whose manifests' sequence numbers are below every snapshot's), in one new
    metadata file that the catalog's pointer is moved to.
The commit log is left alone: these tables were never committed through skade.

  console_lake.py --skade BUILD/src/skade --warehouse DIR [--tables 10000] [--snapshots 100000]
"""
import argparse
import json
import os
import sqlite3
import subprocess
import time
import uuid


def cli(skade, warehouse, *args):
    subprocess.run([skade, '--warehouse', warehouse, '-q', *args], check=True, stdout=subprocess.DEVNULL)


def pointer(db, ns, name):
    row = db.execute('SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?',
                     (ns, name)).fetchone()
    return row[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--skade', required=True)
    ap.add_argument('--warehouse', required=True)
    ap.add_argument('--tables', type=int, default=10_000)
    ap.add_argument('--snapshots', type=int, default=100_000)
    a = ap.parse_args()
    wh = os.path.abspath(a.warehouse)
    started = time.time()
    rows_sql = "SELECT range AS id, 'row ' || range AS v FROM range(1000)"
    cli(a.skade, wh, 'ns', 'create', 'bench')
    cli(a.skade, wh, 'ingest', 'bench.t00000', '--create', '--sql', rows_sql)
    cli(a.skade, wh, 'ingest', 'bench.history', '--create', '--sql', rows_sql)

    db = sqlite3.connect(os.path.join(wh, 'catalog.db'))
    catalog = db.execute("SELECT catalog_name FROM iceberg_tables WHERE table_name = 't00000'").fetchone()[0]

    # The copies of bench.t00000.
    with open(pointer(db, 'bench', 't00000')) as f:
        template = json.load(f)
    tables = []
    locations = []
    for i in range(1, a.tables):
        name = f't{i:05d}'
        location = os.path.join(wh, 'bench', name)
        os.makedirs(os.path.join(location, 'metadata'))
        m = dict(template, **{'table-uuid': str(uuid.uuid4()), 'location': location, 'metadata-log': []})
        path = os.path.join(location, 'metadata', f'00000-{uuid.uuid4()}.metadata.json')
        with open(path, 'w') as f:
            json.dump(m, f)
        tables.append((catalog, 'bench', name, path, None, 'TABLE'))
        locations.append((catalog, 'bench', name, location))
    with db:
        db.executemany('INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, '
                       'previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, ?, ?)', tables)
        db.executemany('INSERT INTO skade_table_locations (catalog_name, table_namespace, table_name, location) '
                       'VALUES (?, ?, ?, ?)', locations)

    # bench.history's past.
    previous = pointer(db, 'bench', 'history')
    with open(previous) as f:
        m = json.load(f)
    real = m['snapshots'][0]
    count = a.snapshots - 1
    t0 = real['timestamp-ms'] - (count + 1) * 1000
    snaps = []
    parent = None
    for i in range(count):
        sid = 1_000_000_000 + i
        snaps.append({
            'sequence-number': i + 1,
            'snapshot-id': sid,
            **({'parent-snapshot-id': parent} if parent is not None else {}),
            'timestamp-ms': t0 + i * 1000,
            'summary': {'operation': 'append', 'added-data-files': '1', 'added-records': '1000',
                        'added-files-size': real['summary']['added-files-size'], 'total-records': '1000',
                        'total-files-size': real['summary']['total-files-size'], 'total-data-files': '1',
                        'total-delete-files': '0', 'engine-name': 'console_lake.py'},
            'manifest-list': real['manifest-list'],
            'schema-id': real.get('schema-id', 0),
        })
        parent = sid
    real = dict(real, **{'sequence-number': count + 1, 'parent-snapshot-id': parent})
    m['snapshots'] = snaps + [real]
    m['last-sequence-number'] = count + 1
    m['snapshot-log'] = [{'timestamp-ms': s['timestamp-ms'], 'snapshot-id': s['snapshot-id']} for s in m['snapshots']]
    m['metadata-log'] = m.get('metadata-log', []) + [{'timestamp-ms': m['last-updated-ms'], 'metadata-file': previous}]
    path = os.path.join(os.path.dirname(previous), f'00002-{uuid.uuid4()}.metadata.json')
    with open(path, 'w') as f:
        json.dump(m, f)
    with db:
        db.execute('UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? '
                   'WHERE table_namespace = ? AND table_name = ?', (path, previous, 'bench', 'history'))
    print(f'console_lake: {a.tables} tables and bench.history of {a.snapshots} snapshots '
          f'({os.path.getsize(path) / 1e6:.1f} MB of metadata) in {time.time() - started:.1f} s')


if __name__ == '__main__':
    main()
