// SPDX-License-Identifier: MIT
// pipeline: a producer and a slow consumer, a state-machine task and a loop
// (futures::repeat) joined by a bounded futures::Queue; the full queue
// throttles the producer.
//
// Step 15 of the series (examples/README.md). New here: the task toolkit
// (futures/queue.hpp): put() and get() return futures, a put to a full queue
// waits for a get, and close() ends the stream.
//
// The producer makes --items items as fast as it can and puts each into a
// queue of --capacity; the consumer takes them one at a time and works
// --work seconds on each. Once the queue is full, every put waits until the
// consumer takes an item, so the producer runs at the consumer's pace and the
// queue never holds more than --capacity items. When the producer is done it
// closes the queue; the consumer drains it, then its get() fails with
// QueueClosed and it stops. --speed X divides the work time by X. Ctrl-C
// stops the run: "pipeline: interrupted", exit 130.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/queue.hpp>
#include <reactor/scheduler.hpp>

#include "cli.hpp"
#include "program.hpp"

namespace {

using Seconds = std::chrono::duration<double>;
using futures::Future;
using futures::Queue;
using futures::Step;

using examples::say;

std::string fill(const Queue<int>& q) { return fmt::format("{}/{}", q.size(), q.capacity()); }

// Puts 1..items into the queue, each once the previous put is done (waiting
// whenever the queue is full); then closes it. Returns how often it waited.
class Producer {
public:
    enum class State { make, putting };

    Producer(Queue<int>& q, int items) : q_(q), items_(items) {}

    Step<int> resume() {
        switch (state_) {
        case State::putting:
            put_.result();
            say(fmt::format("producer: item {} queued ({})", item_, fill(q_)));
            [[fallthrough]];
        case State::make:
            if (item_ == items_) {
                q_.close();
                say(fmt::format("producer: all {} items made; closing the queue", items_));
                return waits_;
            }
            ++item_;
            if (q_.full()) {
                ++waits_;
                say(fmt::format("producer: item {} waits, the queue is full ({})", item_, fill(q_)));
            }
            state_ = State::putting;
            return put_ = q_.put(item_);
        }
        throw std::logic_error("pipeline: unknown producer state");
    }

private:
    Queue<int>& q_;
    int items_;
    int item_ = 0;
    int waits_ = 0;
    State state_ = State::make;
    Future<void> put_;
};

// Takes items until the queue is closed and empty, working `work` on each,
// counting them in `processed`. A loop with nothing else to remember, so a
// loop combinator (futures/repeat.hpp) rather than a machine: each step is
// one get, then the work; a closed queue says stop.
Future<void> consume(reactor::Scheduler& sched, Queue<int>& q, Seconds work, int& processed) {
    return futures::repeat(sched, [&sched, &q, work, &processed] {
        return q.get()
            .then([&sched, work, &processed](int item) {
                say(fmt::format("consumer: working on item {}", item));
                return futures::sleep(sched, work).then([item, &processed] {
                    say(fmt::format("consumer: item {} done", item));
                    ++processed;
                    return futures::StopIteration::no;
                });
            })
            .catch_error([](const futures::QueueClosed&) {
                say("consumer: the queue is closed and empty; stopping");
                return futures::StopIteration::yes;
            });
    });
}

int run(int argc, char** argv) {
    examples::Cli cli("pipeline",
                      "A producer puts items into a bounded queue; a slow consumer takes them. The full queue makes "
                      "the producer wait: it runs at the consumer's pace.");
    int items = 8;
    std::size_t capacity = 3;
    double work = 0.5;
    double speed = 1;
    cli.add_option("--items", items, "how many items the producer makes")->check(examples::range(1, 10000));
    cli.add_option("--capacity", capacity, "the queue's bound")->check(examples::range(1, 1000));
    cli.add_option("--work", work, "seconds the consumer works on each item")->check(examples::seconds);
    cli.add_option("--speed", speed, "divide the work time by this factor")->check(examples::positive);
    cli.parse_or_exit(argc, argv);

    reactor::Scheduler sched;
    // Ctrl-C stops the run (cli.hpp). Installed before the first line is
    // printed, so whoever sees that line may interrupt.
    examples::CtrlC ctrl_c(sched, cli);
    // Declared after the Scheduler, so destroyed first: an interrupted run's
    // tasks still waiting on it are cancelled, then freed with the loop.
    Queue<int> queue(sched, capacity);
    say(fmt::format("pipeline: {} items through a queue of {}, {}s of work each", items, capacity, work / speed));
    const auto start = sched.now();
    Future<int> producer = futures::spawn(sched, Producer(queue, items));
    int processed = 0;
    Future<void> consumer = consume(sched, queue, Seconds(work / speed), processed);
    auto both = futures::when_all(producer, consumer);
    if (auto status = ctrl_c.run_until(both)) return *status;
    const int waits = std::get<0>(both.result());
    say(fmt::format("pipeline: {} items processed in {:.2f}s; the producer waited {} times for room", processed,
                    Seconds(sched.now() - start).count(), waits));
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::guarded_main("pipeline", run, argc, argv); }
