// The Arrow Flight SQL JDBC driver (the one DBeaver uses) against `skade serve`: what a JDBC tool
// does on connect and browse (DatabaseMetaData), queries, prepared statements, writes, basic auth
// and TLS. run_suite.sh starts three servers on one fresh warehouse (plain; --auth basic; --auth
// basic with TLS), compiles this file and runs it; every case prints PASS, FAIL, XFAIL (a known
// limitation, with its reason) or XPASS (a known limitation that no longer fails: update the
// case), and the exit status is non-zero when any case FAILs or XPASSes. In the balanced run
// (engines_jdbc_balanced) each of the plain and --auth basic servers is three behind nginx, and
// the TLS cases print SKIP.
//
// Oracles: the rows this program wrote (the Java model below, ingested with `skade ingest`) and
// the values of its own INSERT statements; what skade reads back through JDBC is also compared
// with `skade scan` / `skade sql` output. Never skade's answer to another question.

import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

public final class JdbcSuite {
  // ---- command line (run_suite.sh) ----
  private static String skade;
  private static Path warehouse;
  private static Path work;
  private static int plainPort;
  private static int authPort;
  private static int tlsPort;
  private static Path certPem;
  // The plain server's processes: one, or (a balanced run) every server behind the balancer,
  // since the cancelled query may run on any of them.
  private static long[] plainPids;
  private static String[][] users;  // {name, password} from the users file the servers read

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) a.put(args[i], args[i + 1]);
    skade = required(a, "--skade");
    warehouse = Path.of(required(a, "--warehouse"));
    work = Path.of(required(a, "--work"));
    plainPort = Integer.parseInt(required(a, "--plain-port"));
    authPort = Integer.parseInt(required(a, "--auth-port"));
    tlsPort = Integer.parseInt(required(a, "--tls-port"));
    certPem = Path.of(required(a, "--cert"));
    plainPids = Arrays.stream(required(a, "--plain-pid").split(",")).mapToLong(Long::parseLong).toArray();
    users = Files.readAllLines(Path.of(required(a, "--users"))).stream()
        .filter(l -> l.contains(":")).map(l -> l.split(":", 2)).toArray(String[][]::new);
    check(users.length >= 2, "the users file needs two users");

    long started = System.nanoTime();
    test("setup.seed_lake_with_cli", JdbcSuite::seedLake);
    if (failed > 0) {
      System.out.println("engines_jdbc: the lake could not be seeded; no case ran");
      System.exit(1);
    }
    runCases();
    System.out.printf("engines_jdbc: %d cases in %.1f s (%d skipped)%n", passed + failed + xfailed + xpassed,
        (System.nanoTime() - started) / 1e9, skipped);
    System.out.printf("engines_jdbc: %d xfailed (known limitations, each with its reason above), %d xpassed%n",
        xfailed, xpassed);
    System.out.printf("engines_jdbc: %d passed, %d failed%n", passed, failed + xpassed);
    System.exit(failed + xpassed == 0 ? 0 : 1);
  }

  private static String required(Map<String, String> a, String key) {
    String v = a.get(key);
    if (v == null) throw new IllegalArgumentException("missing " + key);
    return v;
  }

  // ---- the cases, in order (later ones create tables; the metadata ones come first) ----

  private static void runCases() {
    test("connect.dbeaver_handshake", JdbcSuite::connectLikeDbeaver);
    test("metadata.product_and_driver", JdbcSuite::productAndDriver);
    test("metadata.catalogs", JdbcSuite::catalogs);
    test("metadata.schemas_nested_as_dotted", JdbcSuite::schemas);
    test("metadata.tables", JdbcSuite::tables);
    test("metadata.columns", JdbcSuite::columns);
    test("metadata.primary_keys", JdbcSuite::primaryKeys);
    test("metadata.keys_indexes_procedures_empty", JdbcSuite::emptyBrowseCalls);
    xfail("metadata.type_info",
        "the driver (18.3.0) does not implement DatabaseMetaData.getTypeInfo: Avatica answers an"
            + " empty result and the server's GetXdbcTypeInfo is never asked",
        "getTypeInfo", JdbcSuite::typeInfo);
    xfail("metadata.empty_result_keeps_columns",
        "the driver builds the columns of a metadata result from its first non-empty batch"
            + " (ArrowFlightJdbcFlightStreamResultSet.fromFlightInfo): an empty getImportedKeys has"
            + " no columns, although skade sends the 13-column schema",
        "PKTABLE_NAME", JdbcSuite::emptyMetadataColumns);

    test("query.select_all_matches_model", JdbcSuite::selectAllMatchesModel);
    test("query.select_all_matches_skade_scan", JdbcSuite::selectAllMatchesScan);
    test("query.result_metadata", JdbcSuite::resultMetadata);
    xfail("query.result_nullability",
        "the driver never copies an Arrow field's nullability into Avatica's ColumnMetaData"
            + " (ConvertUtils.convertArrowFieldsToColumnMetaDataList): isNullable is columnNoNulls"
            + " for every column, although skade's fields say which are nullable",
        "isNullable", JdbcSuite::resultNullability);
    test("query.filters_and_aggregates", JdbcSuite::filtersAndAggregates);
    test("query.nested_namespace_tables", JdbcSuite::nestedNamespaceQueries);
    test("query.many_batches", JdbcSuite::manyBatches);
    test("query.empty_result_prepared", JdbcSuite::emptyPreparedResult);
    xfail("query.empty_result_statement",
        "the driver appends the prepared dataset schema to a signature that already holds it"
            + " (ArrowFlightStatement.executeFlightInfoQuery); a zero-row Statement result then"
            + " shows every column twice",
        "[id, note, id, note]", JdbcSuite::emptyStatementResult);
    xfail("query.getObject_timestamptz",
        "Avatica's AvaticaSite.get has no case for Types.TIMESTAMP_WITH_TIMEZONE, so plain"
            + " ResultSet.getObject of a TIMESTAMPTZ column throws 'not implemented'"
            + " (getTimestamp and getObject(i, OffsetDateTime.class) work)",
        "not implemented", JdbcSuite::getObjectTimestampTz);
    test("query.sql_errors_are_sqlexceptions", JdbcSuite::sqlErrors);
    test("query.cancel", JdbcSuite::cancel);

    test("prepared.rebind_select", JdbcSuite::rebindSelect);
    test("prepared.typed_parameters", JdbcSuite::typedParameters);
    // skade announces timestamp parameters in milliseconds: the unit the driver writes.
    test("prepared.timestamp_parameter", JdbcSuite::timestampParameter);
    xfail("prepared.decimal_parameter_of_other_scale",
        "the driver puts a BigDecimal into the DECIMAL parameter vector without rescaling it"
            + " (DecimalAvaticaParameterConverter): 10 for a DECIMAL(10,2) parameter is refused",
        "scale", JdbcSuite::decimalParameterOfOtherScale);
    test("prepared.null_and_hostile_parameters", JdbcSuite::nullAndHostileParameters);

    test("write.insert_literals_decimal_date_timestamptz_uuid_null", JdbcSuite::insertLiterals);
    test("write.execute_update_counts", JdbcSuite::executeUpdateCounts);
    test("write.prepared_without_parameters", JdbcSuite::preparedWithoutParameters);
    test("write.prepared_null_parameters", JdbcSuite::preparedNullParameters);
    test("write.prepared_insert_parameters", JdbcSuite::preparedInsertParameters);
    test("write.prepared_insert_typed_parameters", JdbcSuite::preparedInsertTypedParameters);
    test("write.prepared_update_delete_parameters", JdbcSuite::preparedUpdateDeleteParameters);
    xfail("write.statement_batch",
        "the driver (18.3.0) does not implement Statement.executeBatch (Avatica's"
            + " prepareAndUpdateBatch answers null: NullPointerException)",
        "updateCounts", JdbcSuite::statementBatch);
    test("write.ddl_nested_schemas", JdbcSuite::ddlNestedSchemas);

    test("session.catalog_option", JdbcSuite::catalogOption);
    xfail("session.close_with_catalog_option",
        "the driver closes its client handler twice (ArrowFlightConnection.close): the second"
            + " CloseSession goes to a shut-down channel",
        "Channel shutdown", JdbcSuite::closeWithCatalogOption);
    xfail("session.set_schema",
        "the driver keeps Connection.setSchema on the client (Avatica) and never sends it as a"
            + " session option, so unqualified names are not resolved in that schema",
        "does not exist", JdbcSuite::setSchema);

    test("auth.basic_in_url_and_properties", JdbcSuite::basicAuth);
    test("auth.current_user_in_writes", JdbcSuite::currentUserInWrites);
    test("auth.basic_rejected", JdbcSuite::basicAuthRejected);
    if (tlsPort == 0) {
      // --tls-port 0: the balanced run (run_suite.sh), whose balancer speaks h2c to the servers.
      String why = "behind a balancer: TLS ends at skade, and the balancer here speaks h2c to the servers";
      for (String name : List.of("tls.trusted_root_pem", "tls.trust_store", "tls.untrusted_and_plaintext_refused")) {
        skipped++;
        System.out.printf("SKIP  %s: %s%n", name, why);
      }
      return;
    }
    test("tls.trusted_root_pem", JdbcSuite::tlsRootPem);
    test("tls.trust_store", JdbcSuite::tlsTrustStore);
    test("tls.untrusted_and_plaintext_refused", JdbcSuite::tlsRefused);
  }

  // ---- the model: sales.orders as this program writes it ----

  record Order(long id, Instant ts, String category, BigDecimal amount, LocalDate day, Boolean ok,
      double score, String u) {}

  private static final int ORDERS = 120;
  private static final List<Order> MODEL = new ArrayList<>();

  static {
    Instant base = Instant.parse("2024-01-01T00:00:00Z");
    for (int i = 0; i < ORDERS; i++) {
      MODEL.add(new Order(
          i,
          i % 10 == 3 ? null : base.plus(Duration.ofHours(5L * i)).plusNanos(1000L * i),
          new String[] {null, "a", "b", "c"}[i % 4],
          BigDecimal.valueOf(i * 1234L % 100000 - 20000, 2),
          LocalDate.of(2024, 2, 29).plusDays(i),
          i % 7 == 0 ? null : i % 2 == 0,
          i / 3.0,
          i % 9 == 4 ? null : UUID.nameUUIDFromBytes(("order-" + i).getBytes(StandardCharsets.UTF_8)).toString()));
    }
  }

  private static final String ORDERS_COLUMNS = "id, ts, category, amount, day, ok, score, u";

  private static List<Object> modelRow(Order o) {
    return Arrays.asList(o.id(), o.ts(), o.category(), o.amount(), o.day(), o.ok(), o.score(), o.u());
  }

  private static List<List<Object>> modelRows(Predicate<Order> keep) {
    List<List<Object>> out = new ArrayList<>();
    for (Order o : MODEL) if (keep.test(o)) out.add(modelRow(o));
    return out;
  }

  // One row of sales.orders (columns in ORDERS_COLUMNS order) as model values.
  private static List<Object> ordersRow(ResultSet rs) throws SQLException {
    List<Object> row = new ArrayList<>();
    row.add(rs.getLong(1));
    OffsetDateTime ts = rs.getObject(2, OffsetDateTime.class);
    row.add(ts == null ? null : ts.toInstant());
    row.add(rs.getString(3));
    row.add(rs.getBigDecimal(4));
    row.add(rs.getObject(5) == null ? null : rs.getDate(5).toLocalDate());
    boolean ok = rs.getBoolean(6);
    row.add(rs.wasNull() ? null : ok);
    row.add(rs.getDouble(7));
    row.add(rs.getString(8));
    return row;
  }

  private static void seedLake() throws Exception {
    cli("ns", "create", "sales.eu");
    cli("create", "sales.orders", "--schema",
        "id BIGINT NOT NULL, ts TIMESTAMPTZ, category VARCHAR, amount DECIMAL(10,2), day DATE,"
            + " ok BOOLEAN, score DOUBLE, u UUID, PRIMARY KEY (id)",
        "--partition-by", "category, bucket(4, id)");
    StringBuilder json = new StringBuilder();
    for (Order o : MODEL) {
      json.append("{\"id\":").append(o.id())
          .append(",\"ts\":").append(o.ts() == null ? "null" : jsonString(cliTimestamp(o.ts())))
          .append(",\"category\":").append(o.category() == null ? "null" : jsonString(o.category()))
          .append(",\"amount\":").append(o.amount().toPlainString())
          .append(",\"day\":").append(jsonString(o.day().toString()))
          .append(",\"ok\":").append(o.ok())
          .append(",\"score\":").append(o.score())
          .append(",\"u\":").append(o.u() == null ? "null" : jsonString(o.u()))
          .append("}\n");
    }
    Path file = work.resolve("orders.ndjson");
    Files.writeString(file, json);
    cli("ingest", "sales.orders", file.toString());
    cli("create", "sales.eu.notes", "--schema", "id BIGINT NOT NULL, note VARCHAR");
    cli("sql", "INSERT INTO \"sales.eu\".notes VALUES (1, 'eins'), (2, NULL)");
    cli("create", "sales.eu.typed", "--schema",
        "id BIGINT NOT NULL, amount DECIMAL(12,3), day DATE, ts TIMESTAMPTZ, u UUID, note VARCHAR");
    cli("create", "sales.eu.counts", "--schema", "k INTEGER, v VARCHAR");
    cli("create", "sales.eu.prepared", "--schema",
        "id BIGINT NOT NULL, amount DECIMAL(12,3), day DATE, ts TIMESTAMPTZ, u UUID, note VARCHAR");
    List<Map<String, Object>> scanned = cliRows("scan", "sales.orders");
    check(scanned.size() == ORDERS, "skade scan after ingest: " + scanned.size() + " rows");
  }

  // ---- connect and browse ----

  private static String plainUrl() {
    return "jdbc:arrow-flight-sql://127.0.0.1:" + plainPort + "?useEncryption=false";
  }

  private static Connection plain() throws SQLException {
    return DriverManager.getConnection(plainUrl());
  }

  private static void connectLikeDbeaver() throws Exception {
    try (Connection c = plain()) {
      check(c.isValid(5), "isValid");
      check(c.getAutoCommit(), "autocommit is on");
      c.setAutoCommit(true);
      c.getTransactionIsolation();
      DatabaseMetaData md = c.getMetaData();
      check(!md.isReadOnly(), "the server is not read-only (GetSqlInfo)");
      // skade commits each statement on its own (README: transactions are refused).
      check(!md.supportsTransactions(), "supportsTransactions must be false");
      equal("\"", md.getIdentifierQuoteString(), "identifier quote");
      check(!md.getSQLKeywords().isBlank(), "SQL keywords from GetSqlInfo");
      check(md.getURL().startsWith("jdbc:arrow-flight-sql://127.0.0.1:"), "URL " + md.getURL());
    }
  }

  private static void productAndDriver() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      equal("skade", md.getDatabaseProductName(), "product name");
      check(md.getDatabaseProductVersion().matches("\\d+\\.\\d+\\.\\d+.*"),
          "product version " + md.getDatabaseProductVersion());
      check(md.getDriverName().contains("Arrow Flight SQL JDBC"), "driver " + md.getDriverName());
      equal("18.3.0", md.getDriverVersion(), "driver version (pom.xml pins 18.3.0)");
    }
  }

  private static void catalogs() throws Exception {
    try (Connection c = plain()) {
      equal(List.of(List.of("skade")), rows(c.getMetaData().getCatalogs()), "getCatalogs");
    }
  }

  private static void schemas() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      List<List<Object>> all = rows(md.getSchemas(), "TABLE_SCHEM", "TABLE_CATALOG");
      equal(List.of(List.of("sales", "skade"), List.of("sales.eu", "skade")), all, "getSchemas()");
      equal(List.of(List.of("sales.eu")), rows(md.getSchemas("skade", "sales.eu"), "TABLE_SCHEM"),
          "getSchemas(skade, sales.eu)");
      equal(List.of(List.of("sales"), List.of("sales.eu")), rows(md.getSchemas(null, "sal%"), "TABLE_SCHEM"),
          "getSchemas(null, sal%)");
      equal(List.of(), rows(md.getSchemas(null, "nope%")), "getSchemas(null, nope%)");
    }
  }

  private static void tables() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      List<List<Object>> expected = List.of(
          List.of("skade", "sales", "orders", "TABLE"),
          List.of("skade", "sales.eu", "counts", "TABLE"),
          List.of("skade", "sales.eu", "notes", "TABLE"),
          List.of("skade", "sales.eu", "prepared", "TABLE"),
          List.of("skade", "sales.eu", "typed", "TABLE"));
      String[] cols = {"TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"};
      equal(expected, sorted(rows(md.getTables(null, null, "%", null), cols)), "getTables(all)");
      List<String> types = new ArrayList<>();
      for (List<Object> r : rows(md.getTableTypes(), "TABLE_TYPE")) types.add((String) r.get(0));
      check(types.contains("TABLE"), "getTableTypes " + types);
      equal(expected, sorted(rows(md.getTables("skade", "%", null, new String[] {"TABLE"}), cols)),
          "getTables(types TABLE)");
      equal(List.of(), rows(md.getTables(null, null, "%", new String[] {"VIEW"})), "getTables(types VIEW)");
      // "sales" is a schema of its own: its tables only, not those of "sales.eu".
      equal(expected.subList(0, 1), rows(md.getTables(null, "sales", null, null), cols), "getTables(sales)");
      equal(expected.subList(1, 5), sorted(rows(md.getTables(null, "sales.eu", "%", null), cols)),
          "getTables(sales.eu)");
      equal(List.of(expected.get(2)), rows(md.getTables("skade", "sales.eu", "no%", null), cols),
          "getTables(sales.eu, no%)");
    }
  }

  private static void columns() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      String[] cols = {"TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "NULLABLE",
          "IS_NULLABLE", "ORDINAL_POSITION"};
      List<List<Object>> got = rows(md.getColumns("skade", "sales", "orders", null), cols);
      List<List<Object>> expected = List.of(
          List.of("sales", "orders", "id", Types.BIGINT, "BIGINT", DatabaseMetaData.columnNoNulls, "NO", 1),
          List.of("sales", "orders", "ts", Types.TIMESTAMP_WITH_TIMEZONE, "TIMESTAMP WITH TIME ZONE",
              DatabaseMetaData.columnNullable, "YES", 2),
          List.of("sales", "orders", "category", Types.VARCHAR, "VARCHAR", DatabaseMetaData.columnNullable, "YES", 3),
          List.of("sales", "orders", "amount", Types.DECIMAL, "DECIMAL(10,2)", DatabaseMetaData.columnNullable,
              "YES", 4),
          List.of("sales", "orders", "day", Types.DATE, "DATE", DatabaseMetaData.columnNullable, "YES", 5),
          List.of("sales", "orders", "ok", Types.BOOLEAN, "BOOLEAN", DatabaseMetaData.columnNullable, "YES", 6),
          List.of("sales", "orders", "score", Types.DOUBLE, "DOUBLE", DatabaseMetaData.columnNullable, "YES", 7),
          // DuckDB hands UUID columns to Arrow as text.
          List.of("sales", "orders", "u", Types.VARCHAR, "VARCHAR", DatabaseMetaData.columnNullable, "YES", 8));
      equal(expected, got, "getColumns(sales.orders)");
      List<List<Object>> amount = rows(md.getColumns(null, "sales", "orders", "am%"), "COLUMN_NAME",
          "COLUMN_SIZE", "DECIMAL_DIGITS");
      equal(List.of(List.of("amount", 10, 2)), amount, "getColumns(am%) precision and scale");
      equal(List.of(List.of("sales.eu", "notes", "id", 1), List.of("sales.eu", "notes", "note", 2)),
          rows(md.getColumns("skade", "sales.eu", "notes", "%"), "TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME",
              "ORDINAL_POSITION"),
          "getColumns(sales.eu.notes)");
    }
  }

  private static void primaryKeys() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      equal(List.of(List.of("skade", "sales", "orders", "id", 1)),
          rows(md.getPrimaryKeys("skade", "sales", "orders"), "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME",
              "COLUMN_NAME", "KEY_SEQ"),
          "getPrimaryKeys(sales.orders)");
      equal(List.of(), rows(md.getPrimaryKeys("skade", "sales.eu", "counts")), "getPrimaryKeys(no key)");
    }
  }

  // The calls DBeaver makes for a table's properties: empty answers, no errors.
  private static void emptyBrowseCalls() throws Exception {
    try (Connection c = plain()) {
      DatabaseMetaData md = c.getMetaData();
      equal(List.of(), rows(md.getImportedKeys("skade", "sales", "orders")), "getImportedKeys");
      equal(List.of(), rows(md.getExportedKeys("skade", "sales", "orders")), "getExportedKeys");
      equal(List.of(), rows(md.getCrossReference("skade", "sales", "orders", "skade", "sales.eu", "notes")),
          "getCrossReference");
      equal(List.of(), rows(md.getIndexInfo("skade", "sales", "orders", false, true)), "getIndexInfo");
      equal(List.of(), rows(md.getProcedures(null, null, "%")), "getProcedures");
      equal(List.of(), rows(md.getFunctions(null, null, "%")), "getFunctions");
    }
  }

  private static void typeInfo() throws Exception {
    try (Connection c = plain()) {
      Set<String> names = new TreeSet<>();
      for (List<Object> r : rows(c.getMetaData().getTypeInfo(), "TYPE_NAME")) names.add((String) r.get(0));
      check(names.containsAll(List.of("BIGINT", "DECIMAL", "DATE", "VARCHAR", "TIMESTAMP WITH TIME ZONE")),
          "getTypeInfo type names " + names);
    }
  }

  private static void emptyMetadataColumns() throws Exception {
    try (Connection c = plain(); ResultSet rs = c.getMetaData().getImportedKeys("skade", "sales", "orders")) {
      List<String> names = columnNames(rs.getMetaData());
      check(names.contains("PKTABLE_NAME") && names.contains("FKCOLUMN_NAME"),
          "getImportedKeys columns " + names + " lack PKTABLE_NAME");
    }
  }

  // ---- queries ----

  private static void selectAllMatchesModel() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + ORDERS_COLUMNS + " FROM sales.orders ORDER BY id")) {
      List<List<Object>> got = new ArrayList<>();
      while (rs.next()) got.add(ordersRow(rs));
      sameRows(modelRows(o -> true), got, "SELECT * FROM sales.orders");
      // Scales are exact: DECIMAL(10,2) values come back with scale 2.
      for (List<Object> r : got) equal(2, ((BigDecimal) r.get(3)).scale(), "scale of amount " + r.get(3));
    }
  }

  private static void selectAllMatchesScan() throws Exception {
    List<List<Object>> scanned = new ArrayList<>();
    for (Map<String, Object> r : cliRows("scan", "sales.orders")) {
      scanned.add(Arrays.asList(
          ((BigDecimal) r.get("id")).longValueExact(),
          r.get("ts") == null ? null : parseCliTimestamp((String) r.get("ts")),
          r.get("category"),
          r.get("amount") == null ? null : ((BigDecimal) r.get("amount")).setScale(2, RoundingMode.UNNECESSARY),
          r.get("day") == null ? null : LocalDate.parse((String) r.get("day")),
          r.get("ok"),
          ((BigDecimal) r.get("score")).doubleValue(),
          r.get("u")));
    }
    scanned.sort((x, y) -> Long.compare((Long) x.get(0), (Long) y.get(0)));
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + ORDERS_COLUMNS + " FROM skade.sales.orders ORDER BY id")) {
      List<List<Object>> got = new ArrayList<>();
      while (rs.next()) got.add(ordersRow(rs));
      sameRows(scanned, got, "JDBC vs skade scan");
    }
  }

  private static void resultMetadata() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + ORDERS_COLUMNS + " FROM sales.orders LIMIT 1")) {
      ResultSetMetaData m = rs.getMetaData();
      equal(List.of("id", "ts", "category", "amount", "day", "ok", "score", "u"), columnNames(m), "labels");
      List<Integer> types = new ArrayList<>();
      for (int i = 1; i <= m.getColumnCount(); i++) types.add(m.getColumnType(i));
      equal(List.of(Types.BIGINT, Types.TIMESTAMP_WITH_TIMEZONE, Types.VARCHAR, Types.DECIMAL, Types.DATE,
          Types.BOOLEAN, Types.DOUBLE, Types.VARCHAR), types, "column types");
      equal(10, m.getPrecision(4), "DECIMAL precision");
      equal(2, m.getScale(4), "DECIMAL scale");
    }
  }

  private static void resultNullability() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, category FROM sales.orders LIMIT 1")) {
      ResultSetMetaData m = rs.getMetaData();
      // A column of the table passes its NOT NULL through the query (the Arrow fields say so).
      equal(List.of(ResultSetMetaData.columnNoNulls, ResultSetMetaData.columnNullable),
          List.of(m.isNullable(1), m.isNullable(2)), "isNullable of id, category");
    }
  }

  private static void filtersAndAggregates() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      Map<String, List<Object>> expected = new TreeMap<>();
      for (String cat : new String[] {null, "a", "b", "c"}) {
        long n = 0;
        BigDecimal total = BigDecimal.ZERO.setScale(2);
        for (Order o : MODEL) {
          if (Objects.equals(o.category(), cat)) {
            n++;
            total = total.add(o.amount());
          }
        }
        expected.put(String.valueOf(cat), List.of(n, total));
      }
      Map<String, List<Object>> got = new TreeMap<>();
      try (ResultSet rs = s.executeQuery(
          "SELECT category, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY category")) {
        while (rs.next()) got.put(String.valueOf(rs.getString(1)), List.of(rs.getLong(2), rs.getBigDecimal(3)));
      }
      equal(expected, got, "GROUP BY category");

      Instant from = Instant.parse("2024-01-05T00:00:00Z");
      List<List<Object>> want = modelRows(o -> o.ts() != null && o.ts().isAfter(from) && Boolean.TRUE.equals(o.ok())
          && o.amount().signum() > 0);
      List<List<Object>> rows = new ArrayList<>();
      try (ResultSet rs = s.executeQuery("SELECT " + ORDERS_COLUMNS + " FROM sales.orders WHERE ts > TIMESTAMPTZ"
          + " '2024-01-05 00:00:00+00' AND ok AND amount > 0 ORDER BY id")) {
        while (rs.next()) rows.add(ordersRow(rs));
      }
      check(!want.isEmpty(), "the filter selects something");
      sameRows(want, rows, "WHERE ts > … AND ok AND amount > 0");
    }
  }

  private static void nestedNamespaceQueries() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      List<List<Object>> expected = List.of(Arrays.asList(1L, "eins"), Arrays.asList(2L, null));
      equal(expected, rows(s.executeQuery("SELECT id, note FROM \"sales.eu\".notes ORDER BY id")), "2-part name");
      equal(expected, rows(s.executeQuery("SELECT id, note FROM skade.\"sales.eu\".notes ORDER BY id")),
          "3-part name");
    }
  }

  private static void manyBatches() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT range AS i, 'row ' || range AS t FROM range(300000)")) {
      long n = 0;
      long sum = 0;
      while (rs.next()) {
        long i = rs.getLong(1);
        equal("row " + i, rs.getString(2), "text of row " + i);
        n++;
        sum += i;
      }
      equal(300000L, n, "row count");
      equal(300000L * 299999L / 2, sum, "sum");
    }
  }

  private static void emptyPreparedResult() throws Exception {
    try (Connection c = plain();
        PreparedStatement ps = c.prepareStatement("SELECT " + ORDERS_COLUMNS + " FROM sales.orders WHERE id < 0")) {
      equal(8, ps.getMetaData().getColumnCount(), "prepared metadata columns");
      try (ResultSet rs = ps.executeQuery()) {
        equal(List.of("id", "ts", "category", "amount", "day", "ok", "score", "u"), columnNames(rs.getMetaData()),
            "columns of the empty result");
        check(!rs.next(), "no rows");
      }
    }
  }

  private static void emptyStatementResult() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, note FROM \"sales.eu\".notes WHERE id < 0")) {
      equal(List.of("id", "note"), columnNames(rs.getMetaData()), "columns of the empty result");
    }
  }

  private static void getObjectTimestampTz() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT ts FROM sales.orders WHERE id = 1")) {
      check(rs.next(), "one row");
      Object o = rs.getObject(1);
      check(o != null, "getObject gave null");
    }
  }

  private static void sqlErrors() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      expectSqlException(() -> s.executeQuery("SELEC 1"), "syntax error");
      expectSqlException(() -> s.executeQuery("SELECT * FROM sales.missing"), "missing");
      // The connection is still good.
      equal(List.of(List.of(42)), rows(s.executeQuery("SELECT 42")), "after errors");
    }
  }

  private static void cancel() throws Exception {
    try (Connection c = plain()) {
      Statement s = c.createStatement();
      Thread canceller = new Thread(() -> {
        try {
          Thread.sleep(1500);
          s.cancel();
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      canceller.start();
      long t0 = System.nanoTime();
      SQLException e = expectSqlException(() -> s.executeQuery(
          "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE (a.range * b.range) % 7 = 3"), "");
      canceller.join(10000);
      double seconds = (System.nanoTime() - t0) / 1e9;
      check(seconds < 12, "the cancelled query returned after " + seconds + " s");
      check(String.valueOf(e.getMessage()).toLowerCase().contains("cancel"), "not a cancellation: " + e);
      s.close();
      // The server stops working on it, and keeps serving.
      Thread.sleep(1000);
      double before = cpuSeconds(plainPids);
      Thread.sleep(2000);
      double burnt = cpuSeconds(plainPids) - before;
      check(burnt < 0.5, "skade kept computing the cancelled query (" + burnt + " s CPU in 2 s)");
      try (Statement t = c.createStatement()) {
        equal(List.of(List.of((long) ORDERS)), rows(t.executeQuery("SELECT count(*) FROM sales.orders")), "after");
      }
    }
  }

  // ---- prepared statements ----

  private static void rebindSelect() throws Exception {
    try (Connection c = plain(); PreparedStatement ps = c.prepareStatement(
        "SELECT " + ORDERS_COLUMNS + " FROM sales.orders WHERE id BETWEEN ? AND ? AND category = ? ORDER BY id")) {
      ParameterMetaData pm = ps.getParameterMetaData();
      equal(3, pm.getParameterCount(), "parameter count");
      equal(List.of(Types.BIGINT, Types.BIGINT, Types.VARCHAR),
          List.of(pm.getParameterType(1), pm.getParameterType(2), pm.getParameterType(3)), "parameter types");
      Object[][] bindings = {{0L, 50L, "a"}, {10L, 99L, "b"}, {0L, 200L, "nope"}, {7L, 7L, "c"}};
      for (Object[] b : bindings) {
        long lo = (Long) b[0];
        long hi = (Long) b[1];
        String cat = (String) b[2];
        ps.setLong(1, lo);
        ps.setLong(2, hi);
        ps.setString(3, cat);
        List<List<Object>> got = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) got.add(ordersRow(rs));
        }
        sameRows(modelRows(o -> o.id() >= lo && o.id() <= hi && cat.equals(o.category())), got,
            "bound " + Arrays.toString(b));
      }
    }
  }

  // `SELECT id FROM sales.orders WHERE <condition> ORDER BY id` with `bind` applied: the ids of
  // the model rows `keep` selects, which must be some rows but not all (else the check proves
  // nothing about the bound value).
  private static void filtered(Connection c, String condition, SqlBinder bind, Predicate<Order> keep,
      String what) throws Exception {
    List<Object> want = new ArrayList<>();
    for (Order o : MODEL) if (keep.test(o)) want.add(o.id());
    check(!want.isEmpty() && want.size() < ORDERS, what + ": the model filter selects " + want.size() + " rows");
    try (PreparedStatement ps = c.prepareStatement("SELECT id FROM sales.orders WHERE " + condition + " ORDER BY id")) {
      bind.bind(ps);
      List<List<Object>> wantRows = new ArrayList<>();
      for (Object id : want) wantRows.add(List.of(id));
      sameRows(wantRows, rows(ps.executeQuery()), what);
    }
  }

  interface SqlBinder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  private static void typedParameters() throws Exception {
    try (Connection c = plain()) {
      BigDecimal amount = new BigDecimal("10.50");
      filtered(c, "amount > ?", ps -> ps.setBigDecimal(1, amount), o -> o.amount().compareTo(amount) > 0,
          "decimal parameter");
      LocalDate day = LocalDate.of(2024, 5, 1);
      filtered(c, "day < ?", ps -> ps.setDate(1, Date.valueOf(day)), o -> o.day().isBefore(day), "date parameter");
      filtered(c, "ok = ?", ps -> ps.setBoolean(1, false), o -> Boolean.FALSE.equals(o.ok()), "boolean parameter");
      filtered(c, "score >= ?", ps -> ps.setDouble(1, 30.5), o -> o.score() >= 30.5, "double parameter");
      filtered(c, "id < ?", ps -> ps.setInt(1, 7), o -> o.id() < 7, "int parameter for a BIGINT");
      filtered(c, "id > ?", ps -> ps.setLong(1, 100L), o -> o.id() > 100, "long parameter");
      filtered(c, "category LIKE ?", ps -> ps.setString(1, "%b%"), o -> "b".equals(o.category()),
          "varchar parameter");
      // A UUID column compared with a text parameter (UUID reaches JDBC as VARCHAR).
      String u = MODEL.get(5).u();
      filtered(c, "u = ?", ps -> ps.setString(1, u), o -> u.equals(o.u()), "uuid parameter");
      // Several at once.
      filtered(c, "amount > ? AND day < ? AND ok = ?", ps -> {
        ps.setBigDecimal(1, amount);
        ps.setDate(2, Date.valueOf(day));
        ps.setBoolean(3, true);
      }, o -> o.amount().compareTo(amount) > 0 && o.day().isBefore(day) && Boolean.TRUE.equals(o.ok()),
          "decimal, date and boolean parameters");
    }
  }

  private static void timestampParameter() throws Exception {
    try (Connection c = plain()) {
      Instant from = Instant.parse("2024-01-02T00:00:00Z");
      filtered(c, "ts >= ?", ps -> ps.setTimestamp(1, Timestamp.from(from)),
          o -> o.ts() != null && !o.ts().isBefore(from), "timestamp parameter");
      Instant exact = MODEL.get(0).ts();  // whole milliseconds
      filtered(c, "ts = ?", ps -> ps.setTimestamp(1, Timestamp.from(exact)), o -> exact.equals(o.ts()),
          "timestamp parameter equality");
    }
  }

  private static void decimalParameterOfOtherScale() throws Exception {
    try (Connection c = plain()) {
      filtered(c, "amount > ?", ps -> ps.setBigDecimal(1, new BigDecimal("10")),
          o -> o.amount().compareTo(BigDecimal.TEN) > 0, "decimal parameter of scale 0 for a DECIMAL(10,2) column");
    }
  }

  private static void nullAndHostileParameters() throws Exception {
    try (Connection c = plain()) {
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT id FROM sales.orders WHERE category IS NOT DISTINCT FROM ? ORDER BY id")) {
        ps.setNull(1, Types.VARCHAR);
        List<Object> want = new ArrayList<>();
        for (Order o : MODEL) if (o.category() == null) want.add(o.id());
        equal(want, column(ps.executeQuery()), "NULL parameter");
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM sales.orders WHERE category = ?")) {
        ps.setString(1, "x'; DROP TABLE sales.orders; --");
        equal(List.of(0L), column(ps.executeQuery()), "quote in a parameter");
      }
      try (Statement s = c.createStatement()) {
        equal(List.of((long) ORDERS), column(s.executeQuery("SELECT count(*) FROM sales.orders")), "table intact");
      }
    }
  }

  // ---- writes ----

  // The rows write.insert_literals writes into "sales.eu".typed, as SQL and as model values.
  private static final String[] TYPED_SQL = {
      "(1, 12.345, DATE '2024-02-29', TIMESTAMPTZ '2024-03-10 01:59:59.999999-08:00',"
          + " UUID 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6', 'plain')",
      "(2, -999999999.999, DATE '1970-01-01', TIMESTAMPTZ '1970-01-01 00:00:00+00',"
          + " '00000000-0000-0000-0000-000000000000', 'it''s \"quoted\" ünïcødé ✓')",
      "(3, 0.001, DATE '9999-12-31', TIMESTAMPTZ '2000-01-01 05:30:00.000001+05:30',"
          + " 'ffffffff-ffff-ffff-ffff-ffffffffffff', '')",
      "(4, NULL, NULL, NULL, NULL, NULL)",
      "(5, 999999999.999, DATE '1900-03-01', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00',"
          + " '123e4567-e89b-12d3-a456-426614174000', NULL)",
  };
  private static final List<List<Object>> TYPED_ROWS = List.of(
      Arrays.asList(1L, new BigDecimal("12.345"), LocalDate.of(2024, 2, 29),
          Instant.parse("2024-03-10T09:59:59.999999Z"), "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "plain"),
      Arrays.asList(2L, new BigDecimal("-999999999.999"), LocalDate.of(1970, 1, 1),
          Instant.parse("1970-01-01T00:00:00Z"), "00000000-0000-0000-0000-000000000000",
          "it's \"quoted\" ünïcødé ✓"),
      Arrays.asList(3L, new BigDecimal("0.001"), LocalDate.of(9999, 12, 31),
          Instant.parse("2000-01-01T00:00:00.000001Z"), "ffffffff-ffff-ffff-ffff-ffffffffffff", ""),
      Arrays.asList(4L, null, null, null, null, null),
      Arrays.asList(5L, new BigDecimal("999999999.999"), LocalDate.of(1900, 3, 1),
          Instant.parse("1969-12-31T23:59:59.999999Z"), "123e4567-e89b-12d3-a456-426614174000", null));

  // Rows of a table shaped like "sales.eu".typed as model values: through JDBC…
  private static List<List<Object>> typedRowsJdbc(Connection c, String table) throws SQLException {
    List<List<Object>> out = new ArrayList<>();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, amount, day, ts, u, note FROM " + table + " ORDER BY id")) {
      while (rs.next()) {
        OffsetDateTime ts = rs.getObject(4, OffsetDateTime.class);
        Timestamp legacy = rs.getTimestamp(4);
        check(Objects.equals(ts == null ? null : ts.toInstant(), legacy == null ? null : legacy.toInstant()),
            "getTimestamp and getObject(OffsetDateTime) disagree: " + legacy + " vs " + ts);
        out.add(Arrays.asList(rs.getLong(1), rs.getBigDecimal(2),
            rs.getObject(3) == null ? null : rs.getDate(3).toLocalDate(),
            ts == null ? null : ts.toInstant(), rs.getString(5), rs.getString(6)));
      }
    }
    return out;
  }

  // …and through the CLI's JSON (`skade scan` or `skade sql`), decimals at the column's scale.
  private static List<List<Object>> typedRowsCli(List<Map<String, Object>> json, int scale) {
    List<List<Object>> out = new ArrayList<>();
    for (Map<String, Object> r : json) {
      out.add(Arrays.asList(
          ((BigDecimal) r.get("id")).longValueExact(),
          r.get("amount") == null ? null : ((BigDecimal) r.get("amount")).setScale(scale, RoundingMode.UNNECESSARY),
          r.get("day") == null ? null : LocalDate.parse((String) r.get("day")),
          r.get("ts") == null ? null : parseCliTimestamp((String) r.get("ts")),
          r.get("u"),
          r.get("note")));
    }
    out.sort((x, y) -> Long.compare((Long) x.get(0), (Long) y.get(0)));
    return out;
  }

  private static void insertLiterals() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      int n = s.executeUpdate("INSERT INTO \"sales.eu\".typed VALUES " + String.join(", ", TYPED_SQL));
      equal(TYPED_SQL.length, n, "executeUpdate count");
      sameRows(TYPED_ROWS, typedRowsJdbc(c, "\"sales.eu\".typed"), "read back through JDBC");
    }
    sameRows(TYPED_ROWS, typedRowsCli(cliRows("scan", "sales.eu.typed"), 3), "read back by skade scan");
    sameRows(TYPED_ROWS,
        typedRowsCli(cliRows("sql", "SELECT * FROM \"sales.eu\".typed ORDER BY id"), 3), "read back by skade sql");
  }

  private static void executeUpdateCounts() throws Exception {
    String t = "\"sales.eu\".counts";
    try (Connection c = plain(); Statement s = c.createStatement()) {
      equal(3, s.executeUpdate("INSERT INTO " + t + " VALUES (1, 'a'), (2, 'b'), (3, NULL)"), "INSERT 3 rows");
      equal(2, s.executeUpdate("UPDATE " + t + " SET v = 'u' WHERE k >= 2"), "UPDATE 2 rows");
      equal(1, s.executeUpdate("DELETE FROM " + t + " WHERE k = 1"), "DELETE 1 row");
      equal(0, s.executeUpdate("DELETE FROM " + t + " WHERE k = 99"), "DELETE no row");
      equal(2L, s.executeLargeUpdate("INSERT INTO " + t + " SELECT range::INTEGER + 10, 'r' FROM range(2)"),
          "executeLargeUpdate INSERT … SELECT");
      check(!s.execute("UPDATE " + t + " SET v = 'x' WHERE k = 10"), "execute() of an UPDATE has no result set");
      equal(1, s.getUpdateCount(), "getUpdateCount after execute()");
      List<List<Object>> expected = List.of(Arrays.asList(2, "u"), Arrays.asList(3, "u"), Arrays.asList(10, "x"),
          Arrays.asList(11, "r"));
      equal(expected, rows(s.executeQuery("SELECT k, v FROM " + t + " ORDER BY k")), "through JDBC");
    }
    List<List<Object>> cli = new ArrayList<>();
    for (Map<String, Object> r : cliRows("scan", "sales.eu.counts")) {
      cli.add(Arrays.asList(((BigDecimal) r.get("k")).intValueExact(), r.get("v")));
    }
    cli.sort((x, y) -> Integer.compare((Integer) x.get(0), (Integer) y.get(0)));
    equal(List.of(Arrays.asList(2, "u"), Arrays.asList(3, "u"), Arrays.asList(10, "x"), Arrays.asList(11, "r")), cli,
        "through skade scan");
  }

  private static void preparedWithoutParameters() throws Exception {
    try (Connection c = plain()) {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO \"sales.eu\".prepared VALUES "
          + "(100, 1.5, DATE '2020-01-01', TIMESTAMPTZ '2020-01-01 12:00:00+00', UUID "
          + "'6b1c3a3e-0d7e-4f39-8f3c-0a1b2c3d4e5f', 'no params')")) {
        equal(1, ps.executeUpdate(), "prepared INSERT count");
      }
      try (PreparedStatement ps =
          c.prepareStatement("UPDATE \"sales.eu\".prepared SET note = 'updated' WHERE id = 100")) {
        equal(1, ps.executeUpdate(), "prepared UPDATE count");
      }
      List<List<Object>> want = List.of(Arrays.asList(100L, new BigDecimal("1.500"), LocalDate.of(2020, 1, 1),
          Instant.parse("2020-01-01T12:00:00Z"), "6b1c3a3e-0d7e-4f39-8f3c-0a1b2c3d4e5f", "updated"));
      sameRows(want, typedRowsJdbc(c, "\"sales.eu\".prepared WHERE id = 100"), "through JDBC");
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM \"sales.eu\".prepared WHERE id = 100")) {
        equal(1, ps.executeUpdate(), "prepared DELETE count");
      }
      equal(List.of(), typedRowsJdbc(c, "\"sales.eu\".prepared WHERE id = 100"), "deleted");
    }
  }

  private static void preparedNullParameters() throws Exception {
    try (Connection c = plain()) {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO \"sales.eu\".prepared VALUES (200, ?, ?, ?, ?, ?)")) {
        ps.setNull(1, Types.DECIMAL);
        ps.setNull(2, Types.DATE);
        ps.setNull(3, Types.TIMESTAMP_WITH_TIMEZONE);
        ps.setNull(4, Types.VARCHAR);
        ps.setNull(5, Types.VARCHAR);
        equal(1, ps.executeUpdate(), "count");
      }
      List<List<Object>> want = List.of(Arrays.asList(200L, null, null, null, null, null));
      sameRows(want, typedRowsJdbc(c, "\"sales.eu\".prepared WHERE id = 200"), "through JDBC");
    }
    List<List<Object>> cli = typedRowsCli(cliRows("scan", "sales.eu.prepared", "--where", "id = 200"), 3);
    sameRows(List.of(Arrays.asList(200L, null, null, null, null, null)), cli, "through skade scan");
  }

  private static void preparedInsertParameters() throws Exception {
    List<Object> row = TYPED_ROWS.get(0);
    try (Connection c = plain();
        PreparedStatement ps = c.prepareStatement("INSERT INTO \"sales.eu\".prepared VALUES (?, ?, ?, ?, ?, ?)")) {
      for (int id : new int[] {301, 302}) {
        ps.setLong(1, id);
        ps.setBigDecimal(2, (BigDecimal) row.get(1));
        ps.setDate(3, Date.valueOf((LocalDate) row.get(2)));
        ps.setTimestamp(4, Timestamp.from((Instant) row.get(3)));
        ps.setString(5, (String) row.get(4));
        if (id == 302) ps.setNull(6, Types.VARCHAR); else ps.setString(6, (String) row.get(5));
        equal(1, ps.executeUpdate(), "count");
      }
      List<List<Object>> want = new ArrayList<>();
      for (int id : new int[] {301, 302}) {
        List<Object> r = new ArrayList<>(row);
        r.set(0, (long) id);
        // java.sql.Timestamp reaches the wire as epoch milliseconds (Avatica): what is stored.
        r.set(3, ((Instant) row.get(3)).truncatedTo(ChronoUnit.MILLIS));
        if (id == 302) r.set(5, null);
        want.add(r);
      }
      sameRows(want, typedRowsJdbc(c, "\"sales.eu\".prepared WHERE id > 300"), "through JDBC");
      sameRows(want, typedRowsCli(cliRows("scan", "sales.eu.prepared", "--where", "id > 300"), 3), "skade scan");
    }
  }

  // The parameters of a prepared INSERT have the types of the columns they go to (DBeaver's grid
  // edits are such statements): every type the driver converts right binds. The TIMESTAMPTZ is
  // a literal here (write.prepared_insert_parameters binds it).
  private static void preparedInsertTypedParameters() throws Exception {
    List<Object> row = TYPED_ROWS.get(0);
    try (Connection c = plain();
        PreparedStatement ps = c.prepareStatement("INSERT INTO \"sales.eu\".prepared VALUES"
            + " (?, ?, ?, TIMESTAMPTZ '2024-03-10 01:59:59.999999-08:00', ?, ?)")) {
      ParameterMetaData md = ps.getParameterMetaData();
      List<Integer> types = new ArrayList<>();
      for (int i = 1; i <= md.getParameterCount(); i++) types.add(md.getParameterType(i));
      equal(List.of(Types.BIGINT, Types.DECIMAL, Types.DATE, Types.VARCHAR, Types.VARCHAR), types,
          "parameter types");
      for (int id : new int[] {401, 402}) {
        ps.setLong(1, id);
        ps.setBigDecimal(2, (BigDecimal) row.get(1));
        ps.setDate(3, Date.valueOf((LocalDate) row.get(2)));
        ps.setString(4, (String) row.get(4));
        if (id == 402) ps.setNull(5, Types.VARCHAR); else ps.setString(5, (String) row.get(5));
        equal(1, ps.executeUpdate(), "count");
      }
      List<List<Object>> want = new ArrayList<>();
      for (int id : new int[] {401, 402}) {
        List<Object> r = new ArrayList<>(row);
        r.set(0, (long) id);
        if (id == 402) r.set(5, null);
        want.add(r);
      }
      sameRows(want, typedRowsJdbc(c, "\"sales.eu\".prepared WHERE id > 400"), "through JDBC");
      sameRows(want, typedRowsCli(cliRows("scan", "sales.eu.prepared", "--where", "id > 400"), 3), "skade scan");
    }
  }

  private static void preparedUpdateDeleteParameters() throws Exception {
    try (Connection c = plain()) {
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO \"sales.eu\".counts VALUES (50, 'p'), (51, 'q')");
      }
      try (PreparedStatement ps = c.prepareStatement("UPDATE \"sales.eu\".counts SET v = ? WHERE k = ?")) {
        ps.setString(1, "edited");
        ps.setInt(2, 50);
        equal(1, ps.executeUpdate(), "UPDATE count");
      }
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM \"sales.eu\".counts WHERE k = ?")) {
        ps.setInt(1, 51);
        equal(1, ps.executeUpdate(), "DELETE count");
      }
      try (Statement s = c.createStatement()) {
        equal(List.of(Arrays.asList(50, "edited")),
            rows(s.executeQuery("SELECT k, v FROM \"sales.eu\".counts WHERE k >= 50")), "after");
      }
    }
  }

  private static void statementBatch() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      s.addBatch("INSERT INTO \"sales.eu\".counts VALUES (60, 'batch')");
      s.addBatch("DELETE FROM \"sales.eu\".counts WHERE k = 60");
      equal("[1, 1]", Arrays.toString(s.executeBatch()), "batch counts");
    }
  }

  private static void ddlNestedSchemas() throws Exception {
    try (Connection c = plain(); Statement s = c.createStatement()) {
      DatabaseMetaData md = c.getMetaData();
      s.executeUpdate("CREATE SCHEMA \"sales.tmp\"");
      s.executeUpdate("CREATE SCHEMA \"sales.tmp.deep\"");
      s.executeUpdate("CREATE TABLE \"sales.tmp.deep\".made (a INTEGER NOT NULL, b DECIMAL(5,1))");
      equal(2, s.executeUpdate("INSERT INTO \"sales.tmp.deep\".made VALUES (1, 2.5), (2, NULL)"), "INSERT count");
      equal(List.of(List.of("sales.tmp"), List.of("sales.tmp.deep")), rows(md.getSchemas("skade", "sales.tmp%"),
          "TABLE_SCHEM"), "new dotted schemas");
      equal(List.of(List.of("sales.tmp.deep", "made")),
          rows(md.getTables("skade", "sales.tmp.deep", "%", null), "TABLE_SCHEM", "TABLE_NAME"), "new table");
      equal(List.of(List.of("a", DatabaseMetaData.columnNoNulls), List.of("b", DatabaseMetaData.columnNullable)),
          rows(md.getColumns("skade", "sales.tmp.deep", "made", null), "COLUMN_NAME", "NULLABLE"), "its columns");
      equal(List.of(Arrays.asList(1, new BigDecimal("2.5")), Arrays.asList(2, null)),
          rows(s.executeQuery("SELECT a, b FROM skade.\"sales.tmp.deep\".made ORDER BY a")), "through JDBC");
      List<List<Object>> cli = new ArrayList<>();
      for (Map<String, Object> r : cliRows("scan", "sales.tmp.deep.made")) {
        cli.add(Arrays.asList(((BigDecimal) r.get("a")).intValueExact(), r.get("b")));
      }
      cli.sort((x, y) -> Integer.compare((Integer) x.get(0), (Integer) y.get(0)));
      equal(List.of(Arrays.asList(1, new BigDecimal("2.5")), Arrays.asList(2, null)), cli, "skade scan");
      s.executeUpdate("DROP TABLE \"sales.tmp.deep\".made");
      s.executeUpdate("DROP SCHEMA \"sales.tmp.deep\"");
      s.executeUpdate("DROP SCHEMA \"sales.tmp\"");
      equal(List.of(), rows(md.getSchemas("skade", "sales.tmp%")), "dropped schemas");
      equal(List.of(), rows(md.getTables("skade", "sales.tmp%", "%", null)), "dropped table");
    }
  }

  // ---- session options ----

  private static void catalogOption() throws Exception {
    Connection c = DriverManager.getConnection(plainUrl() + "&catalog=skade");
    try (Statement s = c.createStatement()) {
      equal(List.of((long) ORDERS), column(s.executeQuery("SELECT count(*) FROM sales.orders")), "query");
      equal(List.of(List.of("sales"), List.of("sales.eu")), rows(c.getMetaData().getSchemas(), "TABLE_SCHEM"),
          "getSchemas");
    } finally {
      try {
        c.close();
      } catch (SQLException e) {
        // session.close_with_catalog_option covers this.
      }
    }
    // A catalog the server does not have is refused when the connection opens.
    SQLException e = expectSqlException(() -> DriverManager.getConnection(plainUrl() + "&catalog=nope").close(), "");
    check(String.valueOf(e.getMessage()).contains("catalog"), "refusal does not name the catalog: " + e);
  }

  private static void closeWithCatalogOption() throws Exception {
    Connection c = DriverManager.getConnection(plainUrl() + "&catalog=skade");
    try (Statement s = c.createStatement()) {
      column(s.executeQuery("SELECT 1"));
    }
    c.close();
  }

  private static void setSchema() throws Exception {
    try (Connection c = plain()) {
      c.setSchema("sales.eu");
      equal("sales.eu", c.getSchema(), "getSchema");
      try (Statement s = c.createStatement()) {
        equal(List.of(1L, 2L), column(s.executeQuery("SELECT id FROM notes ORDER BY id")), "unqualified name");
      }
    }
  }

  // ---- basic auth and TLS ----

  private static String authUrl(String extra) {
    return "jdbc:arrow-flight-sql://127.0.0.1:" + authPort + "?useEncryption=false" + extra;
  }

  private static void basicAuth() throws Exception {
    String alice = users[0][0];
    String bob = users[1][0];
    try (Connection c = DriverManager.getConnection(authUrl("&user=" + alice + "&password=" + users[0][1]));
        Statement s = c.createStatement()) {
      equal(List.of(Arrays.asList(alice, (long) ORDERS)),
          rows(s.executeQuery("SELECT current_user, count(*) FROM sales.orders")), "current_user");
      equal(List.of(List.of("sales"), List.of("sales.eu")), rows(c.getMetaData().getSchemas(), "TABLE_SCHEM"),
          "getSchemas with a token");
      try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM sales.orders WHERE category = ?")) {
        ps.setString(1, "b");
        equal(List.of(MODEL.stream().filter(o -> "b".equals(o.category())).count()), column(ps.executeQuery()),
            "prepared");
      }
      equal(1, s.executeUpdate("INSERT INTO \"sales.eu\".counts VALUES (70, 'by alice')"), "INSERT as alice");
    }
    Properties p = new Properties();
    p.put("user", bob);
    p.put("password", users[1][1]);
    try (Connection c = DriverManager.getConnection(authUrl(""), p); Statement s = c.createStatement()) {
      equal(List.of(bob), column(s.executeQuery("SELECT current_user")), "user from Properties");
      equal(bob, c.getMetaData().getUserName(), "getUserName");
      equal(List.of("by alice"), column(s.executeQuery("SELECT v FROM \"sales.eu\".counts WHERE k = 70")),
          "alice's row");
    }
  }

  private static void currentUserInWrites() throws Exception {
    String alice = users[0][0];
    try (Connection c = DriverManager.getConnection(authUrl("&user=" + alice + "&password=" + users[0][1]));
        Statement s = c.createStatement()) {
      equal(1, s.executeUpdate("INSERT INTO \"sales.eu\".counts VALUES (71, current_user)"), "INSERT count");
      equal(List.of(alice), column(s.executeQuery("SELECT v FROM \"sales.eu\".counts WHERE k = 71")),
          "current_user written by an INSERT");
    }
  }

  private static void basicAuthRejected() throws Exception {
    String[] wrong = {"&user=" + users[0][0] + "&password=wrong", "&user=mallory&password=" + users[0][1]};
    for (String creds : wrong) {
      SQLException e = expectSqlException(() -> DriverManager.getConnection(authUrl(creds)).close(), "");
      check(e.getMessage().contains("UNAUTHENTICATED"), "not UNAUTHENTICATED: " + e);
    }
    // Without credentials the driver does no handshake; the first call is refused.
    try (Connection c = DriverManager.getConnection(authUrl("")); Statement s = c.createStatement()) {
      expectSqlException(() -> s.executeQuery("SELECT 1"), "authentication required");
      // (The driver lets metadata calls fail with its unchecked FlightRuntimeException.)
      Exception e = expectException(() -> rows(c.getMetaData().getSchemas()));
      check(messages(e).contains("UNAUTHENTICATED"), "getSchemas without credentials: " + messages(e));
    }
  }

  private static String tlsUrl(String extra) {
    return "jdbc:arrow-flight-sql://127.0.0.1:" + tlsPort + "?useEncryption=true&user=" + users[0][0] + "&password="
        + users[0][1] + extra;
  }

  private static void overTls(String url) throws Exception {
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      equal(List.of(users[0][0]), column(s.executeQuery("SELECT current_user")), "current_user over TLS");
      equal(List.of(List.of("sales"), List.of("sales.eu")), rows(c.getMetaData().getSchemas(), "TABLE_SCHEM"),
          "getSchemas over TLS");
      try (PreparedStatement ps = c.prepareStatement("SELECT sum(amount) FROM sales.orders WHERE category = ?")) {
        ps.setString(1, "c");
        BigDecimal want = BigDecimal.ZERO.setScale(2);
        for (Order o : MODEL) if ("c".equals(o.category())) want = want.add(o.amount());
        equal(List.of(want), column(ps.executeQuery()), "prepared sum over TLS");
      }
    }
  }

  private static void tlsRootPem() throws Exception {
    overTls(tlsUrl("&tlsRootCerts=" + certPem));
  }

  private static void tlsTrustStore() throws Exception {
    // What a DBeaver user configures: a Java trust store with the server's certificate.
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    try (var in = Files.newInputStream(certPem)) {
      ks.setCertificateEntry("skade", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    Path store = work.resolve("truststore.p12");
    String password = "changeit";
    try (var out = Files.newOutputStream(store)) {
      ks.store(out, password.toCharArray());
    }
    overTls(tlsUrl("&trustStore=" + store + "&trustStorePassword=" + password + "&useSystemTrustStore=false"));
  }

  private static void tlsRefused() throws Exception {
    // The test certificate is in no system trust store.
    expectSqlException(() -> {
      try (Connection c = DriverManager.getConnection(tlsUrl("")); Statement s = c.createStatement()) {
        column(s.executeQuery("SELECT 1"));
      }
    }, "");
    // Plain text to the TLS port.
    expectSqlException(() -> {
      String url = "jdbc:arrow-flight-sql://127.0.0.1:" + tlsPort + "?useEncryption=false&user=" + users[0][0]
          + "&password=" + users[0][1];
      try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
        column(s.executeQuery("SELECT 1"));
      }
    }, "");
  }

  // ---- the CLI ----

  private static String cli(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(skade, "--warehouse", warehouse.toString(), "--quiet"));
    cmd.addAll(Arrays.asList(args));
    Path out = Files.createTempFile(work, "cli", ".out");
    Path err = Files.createTempFile(work, "cli", ".err");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("timed out: " + String.join(" ", cmd));
    }
    String stdout = Files.readString(out);
    String stderr = Files.readString(err);
    Files.delete(out);
    Files.delete(err);
    if (p.exitValue() != 0) {
      throw new AssertionError(String.join(" ", cmd) + " exited " + p.exitValue() + ":\n" + stderr + stdout);
    }
    return stdout;
  }

  // Rows of `skade scan …` / `skade sql …` with --format json; numbers as BigDecimal.
  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> cliRows(String... args) throws Exception {
    String[] all = Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--format";
    all[args.length + 1] = "json";
    Object parsed = new Json(cli(all)).parseDocument();
    return (List<Map<String, Object>>) parsed;
  }

  private static final DateTimeFormatter CLI_TS = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");
  private static final java.util.regex.Pattern CLI_TS_TEXT = java.util.regex.Pattern.compile(
      "(\\d{4}-\\d\\d-\\d\\d) (\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?)([+-]\\d\\d)(?::?(\\d\\d))?");

  private static String cliTimestamp(Instant t) {
    return CLI_TS.format(t.atOffset(ZoneOffset.UTC)) + "+00";
  }

  // "2024-01-01 05:00:00.000001+00" (skade prints instants in UTC; the fraction only when non-zero).
  private static Instant parseCliTimestamp(String s) {
    var m = CLI_TS_TEXT.matcher(s);
    check(m.matches(), "not a skade timestamp: " + s);
    String offset = m.group(3) + ":" + (m.group(4) == null ? "00" : m.group(4));
    return OffsetDateTime.parse(m.group(1) + "T" + m.group(2) + offset).toInstant();
  }

  private static String jsonString(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        default -> {
          if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch)); else b.append(ch);
        }
      }
    }
    return b.append('"').toString();
  }

  // A small JSON reader for the CLI's output: objects (insertion-ordered), arrays, strings,
  // numbers (BigDecimal, exact), booleans and null.
  private static final class Json {
    private final String s;
    private int i;

    Json(String s) {
      this.s = s;
    }

    Object parseDocument() {
      Object v = value();
      space();
      if (i != s.length()) throw new IllegalArgumentException("trailing text at " + i);
      return v;
    }

    private void space() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
    }

    private Object value() {
      space();
      char ch = s.charAt(i);
      if (ch == '{') {
        i++;
        Map<String, Object> m = new LinkedHashMap<>();
        space();
        if (s.charAt(i) == '}') {
          i++;
          return m;
        }
        while (true) {
          space();
          String key = string();
          space();
          expect(':');
          m.put(key, value());
          space();
          if (s.charAt(i) == ',') {
            i++;
            continue;
          }
          expect('}');
          return m;
        }
      }
      if (ch == '[') {
        i++;
        List<Object> l = new ArrayList<>();
        space();
        if (s.charAt(i) == ']') {
          i++;
          return l;
        }
        while (true) {
          l.add(value());
          space();
          if (s.charAt(i) == ',') {
            i++;
            continue;
          }
          expect(']');
          return l;
        }
      }
      if (ch == '"') return string();
      if (s.startsWith("true", i)) {
        i += 4;
        return Boolean.TRUE;
      }
      if (s.startsWith("false", i)) {
        i += 5;
        return Boolean.FALSE;
      }
      if (s.startsWith("null", i)) {
        i += 4;
        return null;
      }
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
      if (start == i) throw new IllegalArgumentException("unexpected '" + ch + "' at " + i);
      return new BigDecimal(s.substring(start, i));
    }

    private void expect(char ch) {
      if (s.charAt(i) != ch) throw new IllegalArgumentException("expected '" + ch + "' at " + i);
      i++;
    }

    private String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (true) {
        char ch = s.charAt(i++);
        if (ch == '"') return b.toString();
        if (ch != '\\') {
          b.append(ch);
          continue;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> b.append('\n');
          case 't' -> b.append('\t');
          case 'r' -> b.append('\r');
          case 'b' -> b.append('\b');
          case 'f' -> b.append('\f');
          case 'u' -> {
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> b.append(e);
        }
      }
    }
  }

  // ---- helpers ----

  private static double cpuSeconds(long[] pids) throws IOException {
    double sum = 0;
    for (long pid : pids) {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      sum += (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;  // USER_HZ is 100 on Linux
    }
    return sum;
  }

  private static List<String> columnNames(ResultSetMetaData m) throws SQLException {
    List<String> names = new ArrayList<>();
    for (int i = 1; i <= m.getColumnCount(); i++) names.add(m.getColumnLabel(i));
    return names;
  }

  // Every row of `rs` (closed after) as getObject values; with `columns`, only those, by name.
  private static List<List<Object>> rows(ResultSet rs, String... columns) throws SQLException {
    try (rs) {
      List<List<Object>> out = new ArrayList<>();
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        List<Object> row = new ArrayList<>();
        if (columns.length == 0) {
          for (int i = 1; i <= n; i++) row.add(rs.getObject(i));
        } else {
          for (String c : columns) {
            Object v = rs.getObject(c);
            row.add(v instanceof Short sh ? Integer.valueOf(sh) : v);
          }
        }
        out.add(row);
      }
      return out;
    }
  }

  private static List<Object> column(ResultSet rs) throws SQLException {
    List<Object> out = new ArrayList<>();
    for (List<Object> r : rows(rs)) out.add(r.get(0));
    return out;
  }

  private static List<List<Object>> sorted(List<List<Object>> rows) {
    List<List<Object>> out = new ArrayList<>(rows);
    out.sort((x, y) -> String.valueOf(x).compareTo(String.valueOf(y)));
    return out;
  }

  private static void sameRows(List<List<Object>> expected, List<List<Object>> got, String what) {
    if (expected.equals(got)) return;
    StringBuilder b = new StringBuilder(what + ": " + got.size() + " rows, expected " + expected.size());
    Set<String> want = new LinkedHashSet<>();
    for (List<Object> r : expected) want.add(String.valueOf(r));
    Set<String> have = new LinkedHashSet<>();
    for (List<Object> r : got) have.add(String.valueOf(r));
    int shown = 0;
    for (String r : want) if (!have.contains(r) && shown++ < 5) b.append("\n  missing    ").append(r);
    shown = 0;
    for (String r : have) if (!want.contains(r) && shown++ < 5) b.append("\n  unexpected ").append(r);
    if (want.equals(have)) b.append("\n  (same rows, other order or duplicates)");
    throw new AssertionError(b.toString());
  }

  private static void equal(Object expected, Object got, String what) {
    if (!Objects.equals(expected, got)) {
      throw new AssertionError(what + ": expected " + expected + ", got " + got);
    }
  }

  private static void check(boolean condition, String what) {
    if (!condition) throw new AssertionError(what);
  }

  interface Body {
    void run() throws Exception;
  }

  // Runs `body`, which must throw an SQLException whose message (with its causes') contains
  // `needle`; returns it.
  private static SQLException expectSqlException(Body body, String needle) {
    try {
      body.run();
    } catch (SQLException e) {
      check(messages(e).contains(needle), "SQLException without '" + needle + "': " + messages(e));
      return e;
    } catch (Exception e) {
      throw new AssertionError("expected an SQLException, got " + e, e);
    }
    throw new AssertionError("expected an SQLException");
  }

  private static Exception expectException(Body body) {
    try {
      body.run();
    } catch (Exception e) {
      return e;
    }
    throw new AssertionError("expected an exception");
  }

  private static String messages(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) b.append(t).append(" | ");
    return b.toString();
  }

  // ---- the case runner ----

  private static int passed;
  private static int failed;
  private static int xfailed;
  private static int xpassed;
  private static int skipped;

  private static void test(String name, Body body) {
    long t0 = System.nanoTime();
    try {
      body.run();
      passed++;
      System.out.printf("PASS  %s (%d ms)%n", name, (System.nanoTime() - t0) / 1000000);
    } catch (Throwable e) {
      failed++;
      System.out.printf("FAIL  %s (%d ms): %s%n", name, (System.nanoTime() - t0) / 1000000, describe(e));
    }
  }

  // A case that fails for a known reason outside skade's control (or a reported skade bug): it
  // must fail, and with an error that contains `symptom`; any other failure is a FAIL, a pass
  // is an XPASS (the limitation is gone: make it a plain case).
  private static void xfail(String name, String reason, String symptom, Body body) {
    long t0 = System.nanoTime();
    long ms;
    String got;
    try {
      body.run();
      ms = (System.nanoTime() - t0) / 1000000;
      xpassed++;
      System.out.printf("XPASS %s (%d ms): expected to fail (%s), but passed: make it a plain case%n", name, ms,
          reason);
      return;
    } catch (Throwable e) {
      ms = (System.nanoTime() - t0) / 1000000;
      got = messages(e);
      if (!got.contains(symptom)) {
        failed++;
        System.out.printf("FAIL  %s (%d ms): expected failure '%s' (%s), got: %s%n", name, ms, symptom, reason,
            describe(e));
        return;
      }
    }
    xfailed++;
    String first = got.lines().findFirst().orElse("");
    if (first.length() > 240) first = first.substring(0, 240) + "…";
    System.out.printf("XFAIL %s (%d ms): %s%n      (got: %s)%n", name, ms, reason, first);
  }

  private static String describe(Throwable e) {
    if (e instanceof AssertionError && e.getCause() == null) return e.getMessage();
    StringBuilder b = new StringBuilder(messages(e));
    StackTraceElement[] trace = e.getStackTrace();
    for (int k = 0; k < Math.min(trace.length, 8); k++) b.append("\n      at ").append(trace[k]);
    return b.toString();
  }
}
