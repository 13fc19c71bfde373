// tests/lib/raw_socket.h — a raw loopback connection for end-to-end tests
// that must control every byte (framing, slow or pipelined clients).
// Header-only; not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <string>

namespace tcl::testing {

struct RawSocket {
  explicit RawSocket(int port) : socket(ioc) {
    socket.connect(
        boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  }
  void send(const std::string& bytes) { boost::asio::write(socket, boost::asio::buffer(bytes)); }
  // Reads until the peer closes; returns what arrived.
  std::string read_all() {
    std::string out;
    boost::system::error_code ec;
    char buf[4096];
    for (;;) {
      const std::size_t n = socket.read_some(boost::asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket;
};

}  // namespace tcl::testing
