# SPDX-License-Identifier: MIT
"""asyncio_echo: the Protocol-based echo server of the asyncio docs
("Transports and Protocols" -> "TCP Echo Server"): data_received writes the
data straight back. With --uvloop the same code runs on uvloop's event loop
policy. asyncio and uvloop both set TCP_NODELAY on TCP transports themselves.

usage: asyncio_echo.py [--uvloop] [PORT]   (0 or none: any free port;
prints "listening on 127.0.0.1:PORT")
"""
import asyncio
import sys


class EchoServerProtocol(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)


async def main(port):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(EchoServerProtocol, "127.0.0.1", port)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--uvloop" in args:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        args.remove("--uvloop")
    asyncio.run(main(int(args[0]) if args else 0))
