// SPDX-License-Identifier: MIT
// asio_tls_echo: Asio's own TLS example (examples/cpp11/ssl/server.cpp),
// unchanged in shape: an ssl::stream<tcp::socket> per session kept alive by
// shared_from_this, async_handshake, then async_read_some into a fixed
// buffer and async_write of what was read. Changes, as asio_echo's: a 64 KiB
// buffer instead of 1024 bytes, binding 127.0.0.1 with port 0 + printing the
// port, no_delay; the certificate chain and key come from the command line
// (no password callback, no DH file: ECDHE), and the context is
// ssl::context::tls_server with OpenSSL's defaults otherwise (session
// tickets on, as ours; Asio's engine sets SSL_MODE_RELEASE_BUFFERS itself,
// as ours does: each side's record buffers come and go with each record).
// usage: asio_tls_echo CHAIN KEY [PORT]   (0 or none: any free port; prints "listening on 127.0.0.1:PORT (epoll)")
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include <asio.hpp>
#include <asio/ssl.hpp>

using asio::ip::tcp;

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket socket, asio::ssl::context& context) : socket_(std::move(socket), context) {}

    void start() { do_handshake(); }

private:
    void do_handshake() {
        auto self(shared_from_this());
        socket_.async_handshake(asio::ssl::stream_base::server, [this, self](const std::error_code& error) {
            if (!error) do_read();
        });
    }

    void do_read() {
        auto self(shared_from_this());
        socket_.async_read_some(asio::buffer(data_, max_length), [this, self](std::error_code ec, std::size_t length) {
            if (!ec) do_write(length);
        });
    }

    void do_write(std::size_t length) {
        auto self(shared_from_this());
        asio::async_write(socket_, asio::buffer(data_, length), [this, self](std::error_code ec, std::size_t /*length*/) {
            if (!ec) do_read();
        });
    }

    asio::ssl::stream<tcp::socket> socket_;
    enum { max_length = 64 * 1024 };
    char data_[max_length];
};

class server {
public:
    server(asio::io_context& io_context, unsigned short port, const char* chain, const char* key)
        : acceptor_(io_context, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)),
          context_(asio::ssl::context::tls_server) {
        context_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                             asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                             asio::ssl::context::no_tlsv1_1);
        context_.use_certificate_chain_file(chain);
        context_.use_private_key_file(key, asio::ssl::context::pem);
        do_accept();
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }

private:
    void do_accept() {
        acceptor_.async_accept([this](std::error_code ec, tcp::socket socket) {
            if (!ec) {
                socket.set_option(tcp::no_delay(true));
                std::make_shared<session>(std::move(socket), context_)->start();
            }
            do_accept();
        });
    }

    tcp::acceptor acceptor_;
    asio::ssl::context context_;
};

int main(int argc, char* argv[]) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: asio_tls_echo CHAIN KEY [PORT]\n");
        return 2;
    }
    try {
        asio::io_context io_context;
        server s(io_context, static_cast<unsigned short>(argc > 3 ? std::atoi(argv[3]) : 0), argv[1], argv[2]);
        std::printf("listening on 127.0.0.1:%u (epoll)\n", static_cast<unsigned>(s.port()));
        std::fflush(stdout);
        io_context.run();
    } catch (std::exception& e) {
        std::fprintf(stderr, "Exception: %s\n", e.what());
        return 1;
    }
    return 0;
}
