#pragma once
// One HTTP connection from its accept to its close: the state machine that reads a head, checks
// credentials, reads a body, runs the handler on the pool and writes the response, with a
// deadline on every wait (http_session.cpp).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

namespace loadwatch::http_transport {

struct ServerCore;

/// Takes an accepted socket: admits it to the connection table (which may close a waiting
/// connection to make room, or refuse this one: then it is closed, and counted), and serves it
/// on its own strand, over TLS when `tls` is not null. Called on an I/O thread.
void serve_connection(ServerCore& core, boost::asio::ip::tcp::socket socket,
                      boost::asio::ssl::context* tls);

}  // namespace loadwatch::http_transport
