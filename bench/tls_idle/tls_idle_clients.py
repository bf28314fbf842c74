# SPDX-License-Identifier: MIT
# The clients of bench/tls_idle/tls_idle_heap: 8 warm-up TLS connections to
# 127.0.0.1:PORT, then N more, all handshaken and left idle, held until the
# probe ends this process (at most 60 s). No verification: a throwaway
# self-signed server.
import socket
import ssl
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
held = []


def connect():
    raw = socket.create_connection(("127.0.0.1", port))
    held.append(context.wrap_socket(raw, server_hostname="localhost"))


for _ in range(8):
    connect()
time.sleep(1)
for _ in range(n):
    connect()
time.sleep(60)
