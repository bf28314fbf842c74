// SPDX-License-Identifier: MIT
// The loop's registry of scopes: every futures::Scope not yet settled, so
// that Scheduler::live() shows them as a tree (each top-level scope, then its
// live children with what each waits on, a nested scope's own children after
// it) and the end of the loop ends them. A reactor::LoopService, made on the
// first scope. A scope keeps its index; leaving swaps the last one into its
// place. Loop thread only.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "scope_state.hpp"

namespace futures::detail {

class ScopeRegistry final : public reactor::LoopService {
public:
    explicit ScopeRegistry(reactor::Scheduler& sched) noexcept : LoopService(sched) {}
    ScopeRegistry(const ScopeRegistry&) = delete;
    ScopeRegistry& operator=(const ScopeRegistry&) = delete;
    ~ScopeRegistry() override {
        for (ScopeState* s : scopes_) s->registry_ = nullptr;
    }

    void add(ScopeState& s) {
        scopes_.push_back(&s);
        s.registry_ = this;
        s.registry_index_ = scopes_.size() - 1;
    }
    void remove(ScopeState& s) noexcept {
        const std::size_t i = s.registry_index_;
        scopes_[i] = scopes_.back();
        scopes_[i]->registry_index_ = i;
        scopes_.pop_back();
        s.registry_ = nullptr;
    }

    // Scheduler::close(): every scope is cancelled as from outside (tasks and
    // hand-made futures are cancelled by their own registry); they settle in
    // close()'s run. A scope left open settles when its handle goes.
    void close() override {
        for (Ref<ScopeState>& s : all()) s->cancel();
    }
    // Nothing may run any more: each scope drops its children and ends cancelled.
    void abandon() noexcept override {
        std::vector<Ref<ScopeState>> scopes;
        try {
            scopes = all();
        } catch (...) {
            return;  // out of memory: the scopes' states are freed with their children's waiters
        }
        for (Ref<ScopeState>& s : scopes) s->loop_ended();
    }

    void describe(std::vector<reactor::LiveItem>& out) const override {
        for (ScopeState* s : scopes_)
            if (!s->nested()) s->describe(out, nullptr);
        // A nested scope whose parent settled first cannot exist (the parent
        // waits for it); one whose parent's loop ended is not listed.
    }

private:
    std::vector<Ref<ScopeState>> all() const {
        std::vector<Ref<ScopeState>> out;
        out.reserve(scopes_.size());
        for (ScopeState* s : scopes_)
            if (s->alive()) out.emplace_back(s);
        return out;
    }

    std::vector<ScopeState*> scopes_;
};

void register_scope(ScopeState& s) { s.scheduler().service<ScopeRegistry>().add(s); }
void unregister_scope(ScopeState& s) noexcept {
    if (s.registry_) s.registry_->remove(s);
}

namespace {

// A child's line names at most this many of the states it waits on (a
// when_all of a thousand inputs says how many more).
constexpr std::size_t kNamedInputs = 3;

// "the Future created at f.cpp:12", and what it waits on if it is a leaf
// that says so (" (a timer due in 0.250 s)").
std::string name_of(const StateBase& s) {
    std::string out = fmt::format("the {} created at {}:{}", s.kind(), s.origin().file_name(), s.origin().line());
    if (std::string what = s.waits_on(); !what.empty()) out += fmt::format(" ({})", what);
    return out;
}

// ", waiting on ..." for a plain future: what a leaf waits on itself, else
// where its links lead (a continuation's upstream, a combinator's inputs
// still pending), from what the state keeps anyway; "" if it knows nothing
// (a future completed by hand: its promise is elsewhere).
std::string waiting_on(const StateBase& s) {
    if (std::string what = s.waits_on(); !what.empty()) return ", waiting on " + what;
    const std::vector<StateBase*> up = s.awaited();
    if (up.empty()) return {};
    std::string out = up.size() == 1 ? ", waiting on " : fmt::format(", waiting on {} inputs: ", up.size());
    for (std::size_t i = 0; i < std::min(up.size(), kNamedInputs); ++i) out += (i ? ", " : "") + name_of(*up[i]);
    if (up.size() > kNamedInputs) out += fmt::format(" and {} more", up.size() - kNamedInputs);
    return out;
}

}  // namespace

void ScopeState::describe(std::vector<reactor::LiveItem>& out, const ScopeState* parent) const {
    std::string detail = fmt::format("{}, {} live {}, {}", options_.policy == ScopePolicy::fail_fast ? "fail-fast" : "supervise",
                                     live_, live_ == 1 ? "child" : "children", closed_ ? "closed" : "open");
    if (counted_ != 0) detail += fmt::format(" ({} followed by their own waiters: a stream server's conversations)", counted_);
    if (parent) detail += fmt::format(", nested in the scope created at {}:{}", parent->origin().file_name(),
                                      parent->origin().line());
    out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::scope, std::move(detail), origin(), true});
    for_each_child([&](const Child& c) {
        if (!c.state->pending()) return;
        if (c.is_scope) {
            static_cast<const ScopeState&>(*c.state).describe(out, this);
            return;
        }
        std::string line = fmt::format("child of the scope created at {}:{}: a {}", origin().file_name(),
                                       origin().line(), c.state->kind());
        if (c.shielded) line += ", shielded";
        if (c.state->is_task()) {
            if (c.state->task_names_its_state()) line += fmt::format(", state {}", c.state->task_machine_state());
            if (StateBase* up = c.state->task_awaited()) line += ", waiting on " + name_of(*up);
        } else {
            line += fmt::format(" created at {}:{}", c.state->origin().file_name(), c.state->origin().line());
            line += waiting_on(*c.state);
        }
        out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::scope, std::move(line), c.spawned_at, true});
    });
}

}  // namespace futures::detail
