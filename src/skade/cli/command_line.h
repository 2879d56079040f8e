// Checks of the command line before CLI11 parses it, for messages CLI11 does not give: an
// unknown subcommand, with the nearest real one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace skade::cli {

// When `args` (argv without the program name) names a subcommand `app` does not have: the
// message to print, e.g. "unknown command 'tabels'; did you mean 'tables'?". Options are
// skipped (with their values, looked up in `app` and the subcommands chosen so far); a word in
// the place of a subcommand, at a level that has subcommands and takes no positional
// arguments of its own, must be one of them. nullopt otherwise (CLI11 reports the rest).
std::optional<std::string> UnknownSubcommand(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace skade::cli
