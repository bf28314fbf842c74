// SPDX-License-Identifier: MIT
// uv_echo: the echo server of libuv's own guide (uvbook, "Networking",
// tcp-echo-server/main.c), unchanged in shape: a malloc'd read buffer of the
// suggested size per read, one uv_write per read, freed in the write callback.
// Only additions: port 0 + printing the port, uv_tcp_nodelay (as every
// server in this suite sets TCP_NODELAY), and ignoring SIGPIPE, which libuv
// leaves to the application (a client that closes mid-echo would kill it).
// usage: uv_echo [PORT]   (0 or none: any free port; prints "listening on 127.0.0.1:PORT")
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#define DEFAULT_BACKLOG 128

static uv_loop_t *loop;

typedef struct {
    uv_write_t req;
    uv_buf_t buf;
} write_req_t;

static void free_write_req(uv_write_t *req) {
    write_req_t *wr = (write_req_t *)req;
    free(wr->buf.base);
    free(wr);
}

static void alloc_buffer(uv_handle_t *handle, size_t suggested_size, uv_buf_t *buf) {
    (void)handle;
    buf->base = (char *)malloc(suggested_size);
    buf->len = suggested_size;
}

static void on_close(uv_handle_t *handle) { free(handle); }

static void echo_write(uv_write_t *req, int status) {
    if (status) fprintf(stderr, "Write error %s\n", uv_strerror(status));
    free_write_req(req);
}

static void echo_read(uv_stream_t *client, ssize_t nread, const uv_buf_t *buf) {
    if (nread > 0) {
        write_req_t *req = (write_req_t *)malloc(sizeof(write_req_t));
        req->buf = uv_buf_init(buf->base, (unsigned int)nread);
        uv_write((uv_write_t *)req, client, &req->buf, 1, echo_write);
        return;
    }
    if (nread < 0) {
        if (nread != UV_EOF) fprintf(stderr, "Read error %s\n", uv_err_name((int)nread));
        uv_close((uv_handle_t *)client, on_close);
    }
    free(buf->base);
}

static void on_new_connection(uv_stream_t *server, int status) {
    if (status < 0) {
        fprintf(stderr, "New connection error %s\n", uv_strerror(status));
        return;
    }
    uv_tcp_t *client = (uv_tcp_t *)malloc(sizeof(uv_tcp_t));
    uv_tcp_init(loop, client);
    if (uv_accept(server, (uv_stream_t *)client) == 0) {
        uv_tcp_nodelay(client, 1);
        uv_read_start((uv_stream_t *)client, alloc_buffer, echo_read);
    } else {
        uv_close((uv_handle_t *)client, on_close);
    }
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    loop = uv_default_loop();
    int port = argc > 1 ? atoi(argv[1]) : 0;

    uv_tcp_t server;
    uv_tcp_init(loop, &server);
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    int r = uv_listen((uv_stream_t *)&server, DEFAULT_BACKLOG, on_new_connection);
    if (r) {
        fprintf(stderr, "Listen error %s\n", uv_strerror(r));
        return 1;
    }
    struct sockaddr_storage name;
    int namelen = sizeof name;
    uv_tcp_getsockname(&server, (struct sockaddr *)&name, &namelen);
    printf("listening on 127.0.0.1:%d\n", ntohs(((struct sockaddr_in *)&name)->sin_port));
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}
