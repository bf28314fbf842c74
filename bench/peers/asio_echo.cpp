// SPDX-License-Identifier: MIT
// asio_echo: Asio's own example async_tcp_echo_server.cpp (examples/cpp11/echo),
// unchanged in shape: a session object kept alive by shared_from_this, one
// async_read_some into a fixed buffer, then async_write of what was read.
// Changes: the buffer is 64 KiB instead of the example's 1024 bytes (libuv's
// suggested read size and the C ceiling's buffer, so no server is capped at
// 1 KiB reads), binding 127.0.0.1 with port 0 + printing the port, no_delay.
// usage: asio_echo [PORT]   (0 or none: any free port; prints "listening on 127.0.0.1:PORT")
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include <asio.hpp>

using asio::ip::tcp;

class session : public std::enable_shared_from_this<session> {
public:
    explicit session(tcp::socket socket) : socket_(std::move(socket)) {}

    void start() { do_read(); }

private:
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

    tcp::socket socket_;
    enum { max_length = 64 * 1024 };
    char data_[max_length];
};

class server {
public:
    server(asio::io_context& io_context, short port)
        : acceptor_(io_context, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)) {
        do_accept();
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }

private:
    void do_accept() {
        acceptor_.async_accept([this](std::error_code ec, tcp::socket socket) {
            if (!ec) {
                socket.set_option(tcp::no_delay(true));
                std::make_shared<session>(std::move(socket))->start();
            }
            do_accept();
        });
    }

    tcp::acceptor acceptor_;
};

int main(int argc, char* argv[]) {
    try {
        asio::io_context io_context;
        server s(io_context, static_cast<short>(argc > 1 ? std::atoi(argv[1]) : 0));
        std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(s.port()));
        std::fflush(stdout);
        io_context.run();
    } catch (std::exception& e) {
        std::fprintf(stderr, "Exception: %s\n", e.what());
        return 1;
    }
    return 0;
}
