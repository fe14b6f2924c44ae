#include "deploy/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace detdb {
namespace {

MHD_Result Respond(MHD_Connection* c, const HttpResponse& r) {
  MHD_Response* resp =
      MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  const MHD_Result ret = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
  MHD_destroy_response(resp);
  return ret;
}

MHD_Result Access(void* cls, MHD_Connection* c, const char* url, const char* method, const char* /*version*/,
                  const char* /*upload_data*/, size_t* upload_data_size, void** con_cls) {
  // A request with a body comes in several calls: answer once it is read.
  if (*con_cls == nullptr) {
    static int first;
    *con_cls = &first;
    if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0) {
      return static_cast<MHD_Result>(HttpServer::Dispatch(cls, c, url, method));
    }
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0;  // discard the body
    return MHD_YES;
  }
  HttpResponse r;
  r.status = MHD_HTTP_METHOD_NOT_ALLOWED;
  r.body = "only GET and HEAD\n";
  return Respond(c, r);
}

}  // namespace

int HttpServer::Dispatch(void* self, void* connection, const char* url, const char* /*method*/) {
  auto* server = static_cast<HttpServer*>(self);
  std::string_view path(url);
  if (size_t q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  return Respond(static_cast<MHD_Connection*>(connection), server->handler_(path));
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler) {
  if (options.port > 65535) return absl::InvalidArgumentError(absl::StrCat("http port ", options.port, " > 65535"));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = absl::StrCat(options.port);
  if (int e = getaddrinfo(options.host.c_str(), port.c_str(), &hints, &res); e != 0 || res == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("http: cannot resolve '", options.host, "': ", gai_strerror(e)));
  sockaddr_storage addr{};
  memcpy(&addr, res->ai_addr, res->ai_addrlen);
  const bool v6 = res->ai_family == AF_INET6;
  freeaddrinfo(res);

  std::unique_ptr<HttpServer> server(new HttpServer(std::move(handler)));
  unsigned flags = MHD_USE_POLL_INTERNAL_THREAD;
  if (v6) flags |= MHD_USE_IPv6;
  errno = 0;
  server->daemon_ = MHD_start_daemon(flags, static_cast<uint16_t>(options.port), nullptr, nullptr, &Access,
                                     server.get(), MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),
                                     MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                     MHD_OPTION_END);
  if (server->daemon_ == nullptr)
    return absl::UnavailableError(absl::StrCat("http: cannot listen on ", options.host, ":", options.port,
                                               errno != 0 ? absl::StrCat(": ", strerror(errno)) : ""));
  const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info != nullptr ? info->port : static_cast<uint16_t>(options.port);
  return server;
}

HttpServer::~HttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace detdb
