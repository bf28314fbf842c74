// SPDX-License-Identifier: MIT
// 1 GiB each way through the TLS echo server of examples/19_tls_echo, byte
// for byte, with a slow reader: this process sends 1 GiB over one verified
// TLS connection and checks every byte of the echo, and it reads in bursts
// (every 8 MiB it stops reading for a moment), so the server's output backs
// up to its high-water mark, the server stops reading, and the sender is
// held back in turn. What must hold: every byte comes back in order, and
// the server's memory stays bounded by its water marks, not by the volume
// (its peak RSS, VmHWM from /proc, grows by a few MiB at most over what it
// was after the first MiB). Only bounds are asserted, never timings.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <reactor/tls/certificate_maker.hpp>

#include "support/net_util.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"
#include "support/tls_fixtures.hpp"

using namespace std::chrono_literals;
using reactor_test::Child;

namespace {

constexpr std::size_t kTotal = std::size_t{1} << 30;
constexpr std::size_t kBurst = 8 << 20;                     // read this much, then pause
constexpr auto kPause = std::chrono::milliseconds(2);       // how long the reader stops each time
constexpr std::size_t kChunk = 64 * 1024;                   // one write
constexpr std::size_t kAllowedGrowth = std::size_t{8} << 20;  // of the server's peak RSS

// A field of /proc/<pid>/status ("VmRSS", "VmHWM"), in bytes; 0 if absent.
std::size_t status_bytes(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(field + ":")) return std::stoul(line.substr(field.size() + 1)) * 1024;  // "  1234 kB"
    return 0;
}

// Byte i of the stream is pool[i % pool.size()]: a pool size that is no
// power of two, so a reordering or a repeated chunk cannot match by chance.
const std::string& pool() {
    static const std::string bytes = reactor_test::random_bytes((1 << 20) + 4093, 42);
    return bytes;
}

// Is `data` the stream's bytes from `offset` on?
bool matches(std::size_t offset, std::string_view data) {
    while (!data.empty()) {
        const std::size_t at = offset % pool().size();
        const std::size_t n = std::min(data.size(), pool().size() - at);
        if (std::memcmp(data.data(), pool().data() + at, n) != 0) return false;
        data.remove_prefix(n);
        offset += n;
    }
    return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_gibibyte_each_way_byte_exact_with_a_slow_reader_in_bounded_memory) {
    // Under AddressSanitizer, freed blocks wait in a quarantine (256 MiB by
    // default) that would count as the server's memory: keep it small in
    // the child, so its RSS is its own again. Ignored by other builds.
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string quarantine = "quarantine_size_mb=1:thread_local_quarantine_size_kb=64";
    ::setenv("ASAN_OPTIONS", (asan && *asan ? std::string(asan) + ":" : std::string()).append(quarantine).c_str(), 1);
    reactor_test::TempDir dir;
    const auto& pki = reactor_test::pki();
    Child server(reactor_test::example_path("tls_echo_server"),
                 {"--port", "0", "--max-seconds", "240", "--exit-after", "1", "--cert",
                  dir.write("chain.pem", pki.server.certificate_pem), "--key", dir.write("key.pem", pki.server.key_pem)});
    auto first = server.read_line(20s);
    BOOST_REQUIRE(first);
    const auto m = reactor_test::partial_match_groups(*first, "^listening on 127\\.0\\.0\\.1:([0-9]+) \\(epoll\\)$");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *first);
    const auto port = static_cast<std::uint16_t>(std::stoi((*m)[1]));

    reactor::Scheduler::Options options;
    options.backend = reactor::Backend::epoll;
    reactor::Scheduler sched(std::move(options));
    reactor::tls::ConnectionPtr conn;
    std::size_t sent = 0, received = 0, next_pause = kBurst;
    std::size_t baseline_rss = 0, highest_rss = 0;
    bool corrupt = false, closed = false;
    reactor::End reason;
    reactor::Handle resume;

    auto send_more = [&] {
        while (sent < kTotal && !conn->above_high_water()) {
            const std::size_t at = sent % pool().size();
            const std::size_t n = std::min({kChunk, pool().size() - at, kTotal - sent});
            BOOST_REQUIRE(conn->write(std::string_view(pool()).substr(at, n)));
            sent += n;
        }
    };
    reactor::tls::connect(sched, reactor::Address::loopback_v4(port), reactor_test::client_context(), "localhost",
                          [&](reactor::tls::ConnectionPtr c, std::error_code ec) {
                              BOOST_REQUIRE(!ec);
                              conn = std::move(c);
                              conn->set_handshake_callback([&](reactor::tls::Connection&) { send_more(); });
                              conn->set_low_water_callback([&](reactor::tls::Connection&) { send_more(); });
                              conn->set_data_callback([&](reactor::tls::Connection& c, std::string_view d) {
                                  if (!matches(received, d)) {
                                      corrupt = true;
                                      return c.abort();
                                  }
                                  received += d.size();
                                  if (baseline_rss == 0 && received >= (1 << 20))
                                      baseline_rss = status_bytes(server.pid(), "VmRSS");
                                  if (received == kTotal) return c.close();
                                  if (received >= next_pause) {  // the slow reader
                                      next_pause += kBurst;
                                      highest_rss = std::max(highest_rss, status_bytes(server.pid(), "VmRSS"));
                                      c.pause_reading();
                                      resume = sched.call_later(kPause, [&] { conn->resume_reading(); });
                                  }
                              });
                              conn->set_close_callback(
                                  [&](reactor::tls::Connection&, const reactor::End& r) {
                                      reason = r;
                                      closed = true;
                                  });
                          });
    const auto start = std::chrono::steady_clock::now();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return closed; }, std::chrono::seconds(200)));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Before the server exits: its peak RSS over the whole transfer.
    const std::size_t peak = status_bytes(server.pid(), "VmHWM");
    BOOST_TEST(!corrupt);
    BOOST_TEST(sent == kTotal);
    BOOST_TEST(received == kTotal);
    BOOST_TEST(reason.kind == reactor::EndKind::local, reason.to_string());
    BOOST_TEST_MESSAGE("1 GiB each way in " << seconds << " s; server RSS after the first MiB " << baseline_rss
                                            << ", highest sampled " << highest_rss << ", peak (VmHWM) " << peak);
    BOOST_TEST(baseline_rss > 0u);
    BOOST_TEST(highest_rss > 0u);
    BOOST_TEST(peak <= baseline_rss + kAllowedGrowth, "peak " << peak << " after-first-MiB " << baseline_rss);

    const auto lines = reactor_test::lines_of(server.read_all(30s));
    BOOST_TEST(server.wait(10s) == 0);
    BOOST_REQUIRE(!lines.empty());
    BOOST_TEST(lines.back() == "tls_echo_server: 1 connections, 1 handshakes, 0 failed, 1073741824 bytes echoed, 0 aborted");
}
