// SPDX-License-Identifier: MIT
// Internal: the order of the Scheduler's sleeping heap, shared by the files
// that push, pop and rebuild it. Equal deadlines fire FIFO (by sequence).
#pragma once

namespace reactor {

// Min-heap on (deadline, seq): std heap algorithms build max-heaps, so invert.
struct LaterFirst {
    template <class T>
    bool operator()(const T& a, const T& b) const {
        return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
    }
};

}  // namespace reactor
