// iceberg-rust's scan planning timed on one table, for bench/engines_plan_bench.sh (section aj
// of bench/RESULTS.md). The table is opened from its metadata file with local file IO; each
// timed run makes a fresh StaticTable from the parsed metadata (so no manifest is served from
// the table's object cache of an earlier run), then plans with scan().build().plan_files() and
// drains the task stream, counting tasks and summing their record counts.
//
//   rust_plan --metadata FILE [--threads N] [--filter none|id_lt:V|ts_lt_micros:V]
//             [--repeat R] [--warmup W]
//
// --threads is the number of tokio worker threads of the runtime the planner spawns its work
// on (iceberg-rust runs its manifest reads and entry processing as tasks on the current
// runtime). Prints one JSON object per run on stdout:
//   {"run": i, "warmup": bool, "seconds": s, "tasks": n, "records": n}

use std::process::ExitCode;
use std::time::Instant;

use futures::TryStreamExt;
use iceberg::expr::{Predicate, Reference};
use iceberg::io::FileIO;
use iceberg::spec::{Datum, TableMetadata};
use iceberg::table::StaticTable;
use iceberg::TableIdent;

struct Options {
    metadata: String,
    threads: usize,
    filter: String,
    repeat: usize,
    warmup: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        metadata: String::new(),
        threads: 1,
        filter: "none".to_string(),
        repeat: 5,
        warmup: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--metadata" => options.metadata = value.clone(),
            "--threads" => options.threads = number()?,
            "--filter" => options.filter = value.clone(),
            "--repeat" => options.repeat = number()?,
            "--warmup" => options.warmup = number()?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if options.metadata.is_empty() {
        return Err("--metadata FILE is required".to_string());
    }
    if options.threads == 0 {
        return Err("--threads must be at least 1".to_string());
    }
    Ok(options)
}

// The filters the driver passes: a bound on the long column `id` (pruned by column metrics)
// or on the timestamptz column `ts` in microseconds (pruned by the day partition first).
fn parse_filter(text: &str) -> Result<Option<Predicate>, String> {
    if text == "none" {
        return Ok(None);
    }
    let (kind, value) = text
        .split_once(':')
        .ok_or_else(|| format!("bad filter {text}"))?;
    let value: i64 = value
        .parse()
        .map_err(|e| format!("bad filter value in {text}: {e}"))?;
    match kind {
        "id_lt" => Ok(Some(Reference::new("id").less_than(Datum::long(value)))),
        "ts_lt_micros" => Ok(Some(
            Reference::new("ts").less_than(Datum::timestamptz_micros(value)),
        )),
        _ => Err(format!("unknown filter kind {kind}")),
    }
}

async fn plan_once(
    metadata: &TableMetadata,
    file_io: &FileIO,
    filter: &Option<Predicate>,
) -> iceberg::Result<(u64, u64)> {
    let ident = TableIdent::from_strs(["bench", "plan"])?;
    let table = StaticTable::from_metadata(metadata.clone(), ident, file_io.clone()).await?;
    let mut builder = table.scan();
    if let Some(predicate) = filter {
        builder = builder.with_filter(predicate.clone());
    }
    let scan = builder.build()?;
    let mut stream = scan.plan_files().await?;
    let mut tasks = 0u64;
    let mut records = 0u64;
    while let Some(task) = stream.try_next().await? {
        tasks += 1;
        // A task without a record count would make the sums disagree with the other engines,
        // which the driver reports as a wrong answer.
        records += task.record_count.unwrap_or(0);
    }
    Ok((tasks, records))
}

fn run(options: &Options) -> Result<(), String> {
    let filter = parse_filter(&options.filter)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.threads)
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let file_io = FileIO::new_with_fs();
        let metadata = TableMetadata::read_from(&file_io, &options.metadata)
            .await
            .map_err(|e| format!("reading {}: {e}", options.metadata))?;
        for run in 0..options.warmup + options.repeat {
            let start = Instant::now();
            let (tasks, records) = plan_once(&metadata, &file_io, &filter)
                .await
                .map_err(|e| format!("planning: {e}"))?;
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "{{\"run\": {run}, \"warmup\": {}, \"seconds\": {seconds:.6}, \"tasks\": {tasks}, \"records\": {records}}}",
                run < options.warmup
            );
        }
        Ok(())
    })
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("rust_plan: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rust_plan: {message}");
            ExitCode::FAILURE
        }
    }
}
