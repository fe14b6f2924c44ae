// HttpServer: a small HTTP/1.1 server for a node's /metrics and /healthz
// (docs/OPERATING.md), on GNU libmicrohttpd (Debian's libmicrohttpd-dev).
// It answers GET and HEAD through one handler; every other method gets 405.
// One internal thread polls every connection (a scrape is small and rare);
// at most 64 connections at once, each closed after 10 s idle.
//
// Thread-safety: the handler runs on the server's thread, one request at a
// time; it must be thread-safe with respect to the rest of the program.
// Create/destroy from one owner thread.
#ifndef DETDB_DEPLOY_HTTP_SERVER_H_
#define DETDB_DEPLOY_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace detdb {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // address to bind (a name is resolved; first address wins)
  uint32_t port = 0;               // 0: a free port the kernel picks (see port())
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// path: the request's path without the query string.
using HttpHandler = std::function<HttpResponse(std::string_view path)>;

class HttpServer {
 public:
  // Binds and starts serving. Unavailable if the address cannot be bound
  // (port taken), InvalidArgument if the host does not resolve.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();  // stops the thread and closes every connection

  uint16_t port() const { return port_; }

  // Internal: libmicrohttpd's access callback calls it for GET and HEAD.
  static int Dispatch(void* self, void* connection, const char* url, const char* method);

 private:
  explicit HttpServer(HttpHandler handler) : handler_(std::move(handler)) {}

  HttpHandler handler_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_HTTP_SERVER_H_
