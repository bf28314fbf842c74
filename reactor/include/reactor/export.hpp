// SPDX-License-Identifier: MIT
// REACTOR_API: what the shared libraries export.
//
// The libraries are compiled with -fvisibility=hidden, so a symbol is part of
// libreactor.so's (and libreactor_futures.so's) ABI only when its declaration
// says so: a class marked REACTOR_API exports its out-of-line members, vtable
// and type information (an exception type must be exported, or a user's
// catch cannot see it); a function marked REACTOR_API exports itself.
// Templates and inline code live in the headers and need no mark, except the
// few detail:: functions the header templates call (marked, and still
// detail: not for users). In a static build the mark changes nothing a user
// can see. One macro for both libraries: on ELF they share one symbol space.
#pragma once

#if __cplusplus < 202002L
#error "reactor needs C++20: compile with -std=c++20 (CMake's find_package(reactor) and pkg-config's --cflags say so)"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define REACTOR_API [[gnu::visibility("default")]]
#else
#define REACTOR_API
#endif
