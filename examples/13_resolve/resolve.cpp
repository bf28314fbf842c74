// SPDX-License-Identifier: MIT
// resolve HOST...: looks every host up at once, off the loop thread
// (futures::resolve: getaddrinfo on the default thread pool), and prints each
// host's addresses in the order the hosts were given. A state-machine task
// starts all the lookups, then reads their futures one by one; the loop stays
// free meanwhile (the lookups run concurrently on the pool's workers).
//
//   $ resolve localhost 127.0.0.1 ::1
//   resolving 3 hosts concurrently
//   localhost: ::1 127.0.0.1
//   127.0.0.1: 127.0.0.1
//   ::1: ::1
//
// A host that fails prints its error (std::system_error naming the host) and
// the exit status is 1. --count repeats the lookups (--interval apart), as a
// watch would. Ctrl-C: "resolve: interrupted", exit 130.
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/resolve.hpp>

#include "../cli.hpp"
#include "../program.hpp"

namespace {

using Addresses = std::vector<reactor::Address>;

struct Settings {
    std::vector<std::string> hosts;
    std::string service;  // empty: print addresses without a port
    reactor::ResolveOptions options;
    int count = 1;
    double interval = 1;
};

// One line per host: its addresses, or its error.
std::string describe(const std::string& host, const futures::Future<Addresses>& f, bool with_port) {
    try {
        std::string line = host + ":";
        for (const auto& a : f.result()) {
            line += ' ';
            line += with_port ? a.to_string() : a.host();
        }
        return line;
    } catch (const std::system_error& e) {
        return fmt::format("{}: error: {}", host, e.what());
    }
}

// Round after round: start every lookup, print the answers in order, sleep.
class Main {
public:
    Main(reactor::Scheduler& sched, const Settings& settings) : sched_(&sched), settings_(&settings) {}

    // Returns how many lookups failed.
    futures::Step<int> resume() {
        switch (state_) {
        case State::start_round: {
            lookups_.clear();
            // An empty service would be refused: "0" asks for addresses only.
            const std::string service = settings_->service.empty() ? "0" : settings_->service;
            for (const auto& host : settings_->hosts)
                lookups_.push_back(futures::resolve(*sched_, host, service, settings_->options));
            next_ = 0;
            state_ = State::print;
            return lookups_[0];
        }
        case State::print:
            // lookups_[next_] is done; the others ran meanwhile.
            fmt::print("{}\n", describe(settings_->hosts[next_], lookups_[next_], !settings_->service.empty()));
            std::fflush(stdout);
            if (lookups_[next_].failed()) ++failures_;
            if (++next_ < lookups_.size()) return lookups_[next_];
            if (++round_ == settings_->count) return failures_;
            state_ = State::start_round;
            return nap_ = futures::sleep(*sched_, std::chrono::duration<double>(settings_->interval));
        }
        return failures_;
    }

private:
    enum class State { start_round, print };
    reactor::Scheduler* sched_;
    const Settings* settings_;
    State state_ = State::start_round;
    std::vector<futures::Future<Addresses>> lookups_;
    futures::Future<void> nap_;
    std::size_t next_ = 0;
    int round_ = 0;
    int failures_ = 0;
};

int run(int argc, char** argv) {
    examples::Cli cli("resolve", "Looks the hosts up concurrently, without blocking the loop, and prints their addresses.");
    Settings settings;
    std::string family = "any";
    reactor::Backend backend = reactor::Backend::epoll;
    cli.add_option("hosts", settings.hosts, "host names or numeric addresses")->required();
    cli.add_option("--service", settings.service,
                   "a port number or service name (e.g. http): addresses are printed with its port");
    cli.add_option("--family", family, "any, ipv4 or ipv6")->check(examples::one_of({"any", "ipv4", "ipv6"}));
    cli.add_flag("--numeric", settings.options.numeric_host, "only parse numeric addresses, never look a name up");
    cli.add_option("--count", settings.count, "how many rounds of lookups")->check(examples::range(1, 1000000));
    cli.add_option("--interval", settings.interval, "seconds between rounds")->check(examples::seconds);
    examples::add_backend_option(cli, backend);
    cli.parse_or_exit(argc, argv);
    if (family == "ipv4") settings.options.family = AF_INET;
    if (family == "ipv6") settings.options.family = AF_INET6;

    reactor::Scheduler sched(examples::on(backend));
    // Ctrl-C stops the run (cli.hpp); installed before the first line, so whoever sees it may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    fmt::print("resolving {} host{} concurrently\n", settings.hosts.size(), settings.hosts.size() == 1 ? "" : "s");
    std::fflush(stdout);
    futures::Future<int> main_task = futures::spawn(sched, Main(sched, settings));
    // Interrupted: the lookups still on the pool are dropped with the loop.
    if (auto status = ctrl_c.run_until(main_task)) return *status;
    return main_task.result() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("resolve", run, argc, argv); }
