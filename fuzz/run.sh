#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets with clang and runs each for a bounded time
# over its seed corpus:
#   http_request_fuzz   http_hello's request parser (Debian: clang). Outside
#                       the CMake build: the parser headers need nothing but
#                       the standard library. No sockets: it only parses.
#   tls_handshake_fuzz  the server side of reactor::tls fed a hostile
#                       client's bytes over a Unix socket pair (the libraries
#                       built by CMake with clang >= 15, which has the
#                       std::source_location they use: Debian clang-15, and
#                       OpenSSL: libssl-dev). No network.
#
#   fuzz/run.sh [SECONDS]     default 60 per target; the runs stop by themselves
#
# Inputs the fuzzer finds go to scratch corpora in the build directory
# (FUZZ_BUILD_DIR, default build-fuzz/), never into the seeds under
# fuzz/corpus/; a crash, a leak, a hang or a broken promise leaves its input
# there as crash-*/timeout-* and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz/run.sh: SECONDS must be a positive whole number, not '$seconds'" >&2
  exit 2
fi
out=${FUZZ_BUILD_DIR:-build-fuzz}
mkdir -p "$out/corpus" "$out/corpus-tls"

clang++ -std=c++20 -g -O1 -Wall -Wextra -Wpedantic -Werror \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  fuzz/http_request_fuzz.cpp -o "$out/http_request_fuzz"

# -timeout: one input taking seconds is a bug (a hang); -rss_limit_mb bounds memory.
"$out/http_request_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" fuzz/corpus/http

# clang >= 15 for the libraries (clang 14 lacks __builtin_source_location).
clangxx=""
for candidate in clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++; do
  if command -v "$candidate" >/dev/null &&
     [[ $("$candidate" -dumpversion | cut -d. -f1) -ge 15 ]]; then
    clangxx=$candidate
    break
  fi
done
if [[ -z $clangxx ]]; then
  echo "fuzz/run.sh: tls_handshake_fuzz needs clang >= 15 (Debian: apt-get install clang-15)" >&2
  exit 2
fi
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
cmake -S . -B "$out/tls" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DREACTOR_FUZZ=ON -DREACTOR_BUILD_TESTS=OFF -DREACTOR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$out/tls" -j2 --target tls_handshake_fuzz
"$out/tls/fuzz/tls_handshake_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus-tls" fuzz/corpus/tls
