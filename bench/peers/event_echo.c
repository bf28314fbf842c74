// SPDX-License-Identifier: MIT
// event_echo: the bufferevent echo server of the libevent book ("Fast portable
// non-blocking network programming with Libevent", chapter "Connection
// listeners", example "an echo server"): an evconnlistener, one bufferevent
// per connection, the read callback moves the input buffer to the output.
// Only additions: binding 127.0.0.1, port 0 + printing the port, TCP_NODELAY,
// and ignoring SIGPIPE (libevent leaves that to the application).
// usage: event_echo [PORT]   (0 or none: any free port; prints "listening on 127.0.0.1:PORT")
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

static void echo_read_cb(struct bufferevent *bev, void *ctx) {
    (void)ctx;
    // This callback is invoked when there is data to read on bev.
    struct evbuffer *input = bufferevent_get_input(bev);
    struct evbuffer *output = bufferevent_get_output(bev);
    // Copy all the data from the input buffer to the output buffer.
    evbuffer_add_buffer(output, input);
}

static void echo_event_cb(struct bufferevent *bev, short events, void *ctx) {
    (void)ctx;
    if (events & BEV_EVENT_ERROR) perror("Error from bufferevent");
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) bufferevent_free(bev);
}

static void accept_conn_cb(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                           int socklen, void *ctx) {
    (void)address, (void)socklen, (void)ctx;
    // We got a new connection! Set up a bufferevent for it.
    struct event_base *base = evconnlistener_get_base(listener);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct bufferevent *bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, echo_read_cb, NULL, echo_event_cb, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void accept_error_cb(struct evconnlistener *listener, void *ctx) {
    (void)ctx;
    struct event_base *base = evconnlistener_get_base(listener);
    int err = EVUTIL_SOCKET_ERROR();
    fprintf(stderr, "Got an error %d (%s) on the listener. Shutting down.\n", err,
            evutil_socket_error_to_string(err));
    event_base_loopexit(base, NULL);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    int port = argc > 1 ? atoi(argv[1]) : 0;
    struct event_base *base = event_base_new();
    if (!base) {
        puts("Couldn't open event base");
        return 1;
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((unsigned short)port);

    struct evconnlistener *listener =
        evconnlistener_new_bind(base, accept_conn_cb, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
                                (struct sockaddr *)&sin, sizeof sin);
    if (!listener) {
        perror("Couldn't create listener");
        return 1;
    }
    evconnlistener_set_error_cb(listener, accept_error_cb);

    socklen_t len = sizeof sin;
    getsockname(evconnlistener_get_fd(listener), (struct sockaddr *)&sin, &len);
    printf("listening on 127.0.0.1:%d\n", ntohs(sin.sin_port));
    fflush(stdout);
    event_base_dispatch(base);
    return 0;
}
