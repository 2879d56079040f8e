// Logging: a process-wide spdlog logger writing to stderr. Use SKADE_LOG_INFO(...) etc. with
// fmt-style format strings.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace skade {

enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

// Sets the level of the shared logger (default kWarn; SKADE_LOG_LEVEL=debug|info|warn|error|off
// in the environment overrides the default at first use). Thread-safe.
void SetLogLevel(LogLevel level);

// Parses "debug", "info", "warn", "error", "off"; returns kInfo for anything else.
LogLevel ParseLogLevel(std::string_view name);

// The shared logger (created on first use, writes to stderr).
spdlog::logger& Logger();

}  // namespace skade

#define SKADE_LOG_DEBUG(...) ::skade::Logger().debug(__VA_ARGS__)
#define SKADE_LOG_INFO(...) ::skade::Logger().info(__VA_ARGS__)
#define SKADE_LOG_WARN(...) ::skade::Logger().warn(__VA_ARGS__)
#define SKADE_LOG_ERROR(...) ::skade::Logger().error(__VA_ARGS__)
