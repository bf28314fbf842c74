#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer target for http_hello's request parser with clang
# (Debian: clang) and runs it for a bounded time over the seed corpus.
#
#   fuzz/run.sh [SECONDS]     default 60; the run stops by itself
#
# Outside the CMake build on purpose: libFuzzer needs clang, the project
# builds with any C++20 compiler, and the parser headers need nothing but the
# standard library. Inputs the fuzzer finds go to a scratch corpus in the build
# directory (FUZZ_BUILD_DIR, default build-fuzz/), never into the seeds under
# fuzz/corpus/http/; a crash or a split mismatch leaves its input there as
# crash-* and the script exits non-zero. No sockets: the target only parses.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz/run.sh: SECONDS must be a positive whole number, not '$seconds'" >&2
  exit 2
fi
out=${FUZZ_BUILD_DIR:-build-fuzz}
mkdir -p "$out/corpus"

clang++ -std=c++20 -g -O1 -Wall -Wextra -Wpedantic -Werror \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  fuzz/http_request_fuzz.cpp -o "$out/http_request_fuzz"

# -timeout: one input taking seconds is a bug (a hang); -rss_limit_mb bounds memory.
"$out/http_request_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" fuzz/corpus/http
