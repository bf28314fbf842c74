// SPDX-License-Identifier: MIT
// Connections over pipes and the standard streams (libuv's uv_pipe_t and
// uv_tty_t, asyncio's connect_read_pipe/connect_write_pipe). Connection::adopt
// takes any pipe end or terminal; these helpers make the pipe, or adopt a
// standard stream without taking it away from the rest of the program.
// Loop thread only.
//
// A connection's directions follow its fd's access mode:
//  - read-only (a pipe's read end): write() returns false, as after
//    write_eof(); reading to EOF then closes the connection (reason eof).
//  - write-only (a pipe's write end): nothing is ever read; write_eof()
//    closes the fd once the output is flushed (the reader sees EOF), and
//    close reason eof. The loop watches a write-only pipe for its reader
//    going away: the connection then closes with reason reset (EPIPE),
//    even with nothing to write.
//  - read-write (a socket, a terminal): both; on anything but a socket,
//    write_eof() only ends writing (a terminal has no half-close).
#pragma once

#include <memory>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"

namespace reactor {

// Both ends of a new pipe (pipe2: non-blocking, close-on-exec), each adopted:
// bytes written to `write_end` are read from `read_end`. write_end's
// write_eof() (or close()) makes read_end see EOF; closing read_end makes
// write_end close with reason reset (EPIPE). Throws std::system_error (EMFILE...).
struct PipeConnections {
    ConnectionPtr read_end;
    ConnectionPtr write_end;
};
REACTOR_API PipeConnections open_pipe(Scheduler& sched, ConnectionOptions options = {});

// A connection over a duplicate of `fd` (usually 0, 1 or 2: stdin, stdout,
// stderr), which stays open and the caller's: closing the connection closes
// only the duplicate. The fd must be a pipe, a terminal or a socket (a
// regular file, as with `prog < file`, throws std::invalid_argument naming
// its type: read it with ordinary blocking reads instead). Its open file
// description is made non-blocking, and its flags as found are put back when
// the connection closes. Meanwhile every process sharing the description
// (the shell on a terminal, the other end's neighbours in a pipeline) sees
// O_NONBLOCK; a process that dies without closing the connection leaves it
// set (as asyncio, libuv and Node do). Direction as Connection::adopt: stdin
// from a terminal is read-write, from a pipe read-only. Throws
// std::system_error if `fd` is not open (EBADF).
REACTOR_API ConnectionPtr adopt_stdio(Scheduler& sched, int fd, ConnectionOptions options = {});

}  // namespace reactor
