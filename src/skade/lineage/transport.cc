#include "skade/lineage/transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <utility>

#include "skade/base/fd.h"
#include "skade/io/http_client.h"
#include "skade/io/reserved_files.h"

namespace skade::lineage {
namespace {

class HttpTransport final : public Transport {
 public:
  explicit HttpTransport(HttpTransportOptions options) : options_(std::move(options)) {
    io::HttpClientOptions http;
    http.retry.max_attempts = 1;  // the emitter retries, with its own backoff and stop checks
    http.user_agent = "skade-openlineage";
    client_ = io::HttpClient::Make(http);
  }

  Status Send(std::string_view event_json) override {
    io::HttpRequest req;
    req.method = "POST";
    req.url = options_.url;
    req.body = event_json;
    req.timeout = options_.timeout;
    req.connect_timeout = options_.connect_timeout;
    req.retry = io::RetryMode::kNever;
    req.headers.Set("Content-Type", "application/json");
    if (!options_.api_key.empty()) req.headers.Set("Authorization", "Bearer " + options_.api_key);
    auto r = client_->Send(req);
    if (!r.ok()) return Status::Unavailable(r.status().message());
    if (r->status >= 200 && r->status < 300) return Status::Ok();
    std::string body = r->body.substr(0, 200);
    const std::string what = "OpenLineage endpoint " + Describe() + " answered " + std::to_string(r->status) +
                             (body.empty() ? "" : ": " + body);
    // A refused token or an overloaded receiver can recover; a refused event cannot.
    if (r->status >= 500 || r->status == 429 || r->status == 408 || r->status == 401 || r->status == 403) {
      return Status::Unavailable(what);
    }
    return Status::InvalidArgument(what);
  }

  std::string Describe() const override { return io::RedactUrl(options_.url); }

 private:
  HttpTransportOptions options_;
  std::unique_ptr<io::HttpClient> client_;
};

class FileTransport final : public Transport {
 public:
  explicit FileTransport(FileTransportOptions options) : options_(std::move(options)) {}
  ~FileTransport() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Open() {
    SKADE_RETURN_IF_ERROR(io::CheckNotReserved(options_.path, "lineage file"));
    fd_ = ::open(options_.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return Status::IoError("open lineage file '" + options_.path + "': " + std::strerror(errno));
    size_ = ::lseek(fd_, 0, SEEK_END);
    return Status::Ok();
  }

  Status Send(std::string_view event_json) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t line = static_cast<int64_t>(event_json.size()) + 1;
    if (options_.max_bytes > 0 && size_ > 0 && size_ + line > options_.max_bytes) SKADE_RETURN_IF_ERROR(Rotate());
    std::string text(event_json);
    text.push_back('\n');
    SKADE_RETURN_IF_ERROR(WriteAll(fd_, text, "write lineage file '" + options_.path + "'"));
    if (::fsync(fd_) != 0) return Status::IoError("fsync lineage file '" + options_.path + "': " + std::strerror(errno));
    size_ += line;
    return Status::Ok();
  }

  std::string Describe() const override { return "file " + options_.path; }

 private:
  Status Rotate() {
    std::error_code ec;
    const auto name = [&](int i) { return options_.path + "." + std::to_string(i); };
    std::filesystem::remove(name(options_.max_files), ec);
    for (int i = options_.max_files - 1; i >= 1; --i) std::filesystem::rename(name(i), name(i + 1), ec);
    if (options_.max_files >= 1) {
      std::filesystem::rename(options_.path, name(1), ec);
      if (ec) return Status::IoError("rotate lineage file '" + options_.path + "': " + ec.message());
    } else {
      std::filesystem::remove(options_.path, ec);
    }
    ::close(fd_);
    fd_ = -1;
    return Open();
  }

  FileTransportOptions options_;
  std::mutex mu_;
  int fd_ = -1;
  int64_t size_ = 0;
};

class ConsoleTransport final : public Transport {
 public:
  explicit ConsoleTransport(std::ostream& out) : out_(out) {}
  Status Send(std::string_view event_json) override {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << event_json << '\n';
    out_.flush();
    return out_ ? Status::Ok() : Status::IoError("cannot write lineage events to the console");
  }
  std::string Describe() const override { return "console"; }

 private:
  std::ostream& out_;
  std::mutex mu_;
};

}  // namespace

Result<std::unique_ptr<Transport>> MakeHttpTransport(HttpTransportOptions options) {
  const std::string& url = options.url;
  const size_t sep = url.find("://");
  const std::string scheme = sep == std::string::npos ? "" : url.substr(0, sep);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument("OpenLineage URL '" + io::RedactUrl(url) + "' is not http(s)://HOST[:PORT][/PATH]");
  }
  const size_t host_begin = sep + 3;
  const size_t path_begin = url.find_first_of("/?#", host_begin);
  const std::string authority = url.substr(host_begin, path_begin == std::string::npos ? std::string::npos
                                                                                        : path_begin - host_begin);
  if (authority.empty() || authority.find_first_of(" \t\r\n") != std::string::npos) {
    return Status::InvalidArgument("OpenLineage URL '" + io::RedactUrl(url) + "' names no host");
  }
  if (path_begin == std::string::npos || url.compare(path_begin, std::string::npos, "/") == 0) {
    options.url = url.substr(0, path_begin == std::string::npos ? url.size() : path_begin) + "/api/v1/lineage";
  }
  return std::unique_ptr<Transport>(std::make_unique<HttpTransport>(std::move(options)));
}

Result<std::unique_ptr<Transport>> MakeFileTransport(FileTransportOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("no lineage file given");
  auto t = std::make_unique<FileTransport>(std::move(options));
  SKADE_RETURN_IF_ERROR(t->Open());
  return std::unique_ptr<Transport>(std::move(t));
}

std::unique_ptr<Transport> MakeConsoleTransport(std::ostream& out) { return std::make_unique<ConsoleTransport>(out); }

}  // namespace skade::lineage
