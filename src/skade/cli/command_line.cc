#include "skade/cli/command_line.h"

#include <CLI/CLI.hpp>

#include "skade/cli/messages.h"

namespace skade::cli {
namespace {

// The option named `name` ("--warehouse", "-q") at `level` or, since global options may follow
// a subcommand (fallthrough), at one of its parents.
const CLI::Option* FindOption(const CLI::App* level, const std::string& name) {
  for (const CLI::App* app = level; app != nullptr; app = app->get_parent()) {
    if (const CLI::Option* option = app->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

std::vector<const CLI::App*> Subcommands(const CLI::App& level) {
  return level.get_subcommands([](const CLI::App*) { return true; });
}

const CLI::App* Subcommand(const CLI::App& level, const std::string& name) {
  for (const CLI::App* sub : Subcommands(level)) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

bool TakesPositionals(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_positional()) return true;
  }
  return false;
}

std::string UnknownMessage(const std::string& word, const CLI::App& level) {
  std::vector<std::string> names;
  for (const CLI::App* sub : Subcommands(level)) names.push_back(sub->get_name());
  const std::string where = level.get_parent() == nullptr ? "" : " of '" + level.get_name() + "'";
  std::string message = "unknown command '" + word + "'" + where;
  if (std::optional<std::string> nearest = NearestName(word, names)) {
    return message + "; did you mean '" + *nearest + "'?";
  }
  return message + "; run with --help for the commands";
}

}  // namespace

std::optional<std::string> UnknownSubcommand(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* level = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.find('=') != std::string::npos) continue;
      const CLI::Option* option = FindOption(level, arg);
      if (option != nullptr && option->get_items_expected_min() > 0) ++i;  // its value (a flag has none)
      continue;
    }
    if (Subcommands(*level).empty()) return std::nullopt;
    const CLI::App* sub = Subcommand(*level, arg);
    if (sub != nullptr) {
      level = sub;
      continue;
    }
    if (TakesPositionals(*level)) return std::nullopt;
    return UnknownMessage(arg, *level);
  }
  return std::nullopt;
}

}  // namespace skade::cli
