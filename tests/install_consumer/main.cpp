#include <chrono>
#include <cstdio>

#include <reactor/scheduler.hpp>

int main() {
    reactor::Scheduler sched;
    int ran = 0;
    sched.call_soon([&] { ++ran; });
    sched.call_later(std::chrono::milliseconds(1), [&] { ++ran; });
    sched.call_soon([&] { sched.call_soon([&] { ++ran; }); });
    sched.run();
    std::printf("consumer: %d callbacks ran\n", ran);
    return ran == 3 ? 0 : 1;
}
