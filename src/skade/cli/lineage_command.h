// OpenLineage from the CLI: the options `serve` and `lineage run` share, starting the emitter
// over a lake, and the `lineage` subcommands (run: follow the catalog and emit; show: print the
// events a table's commits produce).
#pragma once

#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/cli/lake.h"
#include "skade/events/bus.h"
#include "skade/lineage/emitter.h"

namespace CLI {
class App;
}

namespace skade::cli {

struct LineageArgs {
  std::string url;      // --openlineage-url, else $OPENLINEAGE_URL
  std::string api_key;  // $OPENLINEAGE_API_KEY (kept off command lines)
  std::string file;     // --openlineage-file: JSON lines
  bool console = false; // --openlineage-console
  std::string job_namespace = "skade";
  std::string dataset_namespace;  // default skade://<host>/<warehouse>
  std::string state;    // cursor file for catalogs that keep no cursors (default under ~/.local/state/skade)
  bool from_beginning = false;  // with no stored cursor: every commit in the log, not only new ones
};

// Adds the --openlineage-* options to `cmd`.
void AddLineageOptions(CLI::App& cmd, LineageArgs* args);

// Whether any transport is configured (flags or $OPENLINEAGE_URL).
bool LineageWanted(const LineageArgs& args);

// Starts the emitter over `lake` fed by `bus`; null when no transport is configured.
// kInvalidArgument for an invalid URL or two transports at once.
Result<std::unique_ptr<lineage::Emitter>> StartLineage(const LineageArgs& args, Lake& lake, events::Bus& bus);

// Registers `lineage run` and `lineage show`; each sets *exit_code when it runs.
void AddLineageCommand(CLI::App& app, const LakeArgs& lake, int* exit_code);

}  // namespace skade::cli
