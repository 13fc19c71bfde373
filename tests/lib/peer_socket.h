// tests/lib/peer_socket.h — a plain POSIX loopback connection for the abuse
// tests: it may come from another loopback address (127.0.0.2, ... so that
// one test can play several clients), sends without throwing when tcld has
// closed (a refused body), and reads with a deadline. Header-only; not
// thread-safe.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace tcl::testing {

class PeerSocket {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to 127.0.0.1:port from `source` (any 127/8 address); `rcvbuf`
  // > 0 sets a small receive buffer (a slow reader). ok() tells whether it did.
  explicit PeerSocket(int port, const std::string& source = "127.0.0.1", int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<unsigned short>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      close();
    }
  }
  ~PeerSocket() { close(); }
  PeerSocket(const PeerSocket&) = delete;
  PeerSocket& operator=(const PeerSocket&) = delete;
  PeerSocket(PeerSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Sends all of `bytes`; false (no exception) once the peer has closed or reset.
  bool send(const std::string& bytes) {
    std::size_t at = 0;
    while (ok() && at < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return ok();
  }
  // Whatever arrives until the peer closes or `wait` passes; *closed tells
  // which (a reset counts as closed, with what arrived before it).
  std::string read_for(std::chrono::milliseconds wait, bool* closed = nullptr, std::size_t most = 1 << 30) {
    std::string out;
    const auto end = Clock::now() + wait;
    bool eof = false;
    char buf[4096];
    while (ok() && out.size() < most) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, most - out.size()), 0);
      if (n <= 0) {
        eof = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    if (closed) *closed = eof;
    return out;
  }

 private:
  int fd_ = -1;
};

}  // namespace tcl::testing
