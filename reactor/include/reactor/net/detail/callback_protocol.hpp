// SPDX-License-Identifier: MIT
// reactor::detail::CallbackProtocol: the Protocol behind a connection's
// callback API (set_data_callback, set_close_callback, ...), made by the
// connection when a callback is first set, so that a connection driven by
// a Protocol of its own (a futures::Stream, a TLS layer) pays nothing for
// it. One for every transport with callbacks: `Conn` is the plain
// reactor::Connection or reactor::tls::Connection, whose callbacks take it.
//
// The data and close callbacks are in the object; the rarer ones (EOF,
// drain, water marks) in a block made when one of them is first set. Each
// is a CallbackSlot: a callback may replace, clear or destroy itself while
// it runs. The connection owns its adapter and keeps it until it is
// destroyed, so an adapter is never freed under one of its own callbacks
// (STARTTLS replaces the protocol from inside a data callback). Part of the
// connections' headers; not an API.
#pragma once

#include <memory>
#include <string_view>

#include "reactor/callback_slot.hpp"
#include "reactor/net/end.hpp"
#include "reactor/net/transport.hpp"

namespace reactor::detail {

template <class Conn>
class CallbackProtocol final : public Protocol {
public:
    explicit CallbackProtocol(Conn& conn) noexcept : conn_(&conn) {}

    CallbackSlot<void(Conn&, std::string_view)> data;
    CallbackSlot<void(Conn&, const End&)> close;
    struct Rare {
        CallbackSlot<void(Conn&)> eof;
        CallbackSlot<void(Conn&)> drain;
        CallbackSlot<void(Conn&)> high_water;
        CallbackSlot<void(Conn&)> low_water;
    };
    using RareSlot = CallbackSlot<void(Conn&)> Rare::*;

    // The setters of `conn`'s callbacks, which `owner` keeps: a callback set
    // makes them (on first use) and makes them the protocol
    // (Conn::set_protocol); clearing one never makes them, nor takes the
    // place of another protocol, nor makes the rarer callbacks' block.
    static void set_data(Conn& conn, std::unique_ptr<CallbackProtocol>& owner,
                         SlotFunction<void(Conn&, std::string_view)> cb) {
        if (cb) {
            made(conn, owner).data.set(std::move(cb));
        } else if (owner) {
            owner->data.reset();
        }
    }
    static void set_close(Conn& conn, std::unique_ptr<CallbackProtocol>& owner, SlotFunction<void(Conn&, const End&)> cb) {
        if (cb) {
            made(conn, owner).close.set(std::move(cb));
        } else if (owner) {
            owner->close.reset();
        }
    }
    static void set_rare(Conn& conn, std::unique_ptr<CallbackProtocol>& owner, RareSlot slot,
                         SlotFunction<void(Conn&)> cb) {
        if (cb) {
            CallbackProtocol& callbacks = made(conn, owner);
            if (!callbacks.rare_) callbacks.rare_ = std::make_unique<Rare>();
            ((*callbacks.rare_).*slot).set(std::move(cb));
        } else if (owner && owner->rare_) {
            ((*owner->rare_).*slot).reset();
        }
    }

    void on_data(std::string_view bytes) override { data.invoke(*conn_, bytes); }
    // With an EOF callback the connection stays open for writing.
    bool on_eof() override {
        if (!rare_ || !rare_->eof) return false;
        rare_->eof.invoke(*conn_);
        return true;
    }
    void on_pause_writing() override {
        if (rare_) rare_->high_water.invoke(*conn_);
    }
    void on_resume_writing() override {
        if (rare_) rare_->low_water.invoke(*conn_);
    }
    bool wants_drained() const noexcept override { return rare_ && rare_->drain; }
    void on_drained() override {
        if (rare_) rare_->drain.invoke(*conn_);
    }
    // Every callback is dropped before the close callback runs (taken out:
    // it runs once), so a cycle through their captures is broken even if
    // it throws.
    void on_closed(const End& end) override {
        auto on_close = close.take();
        clear();
        if (on_close) on_close(*conn_, end);
    }
    void on_abandoned() noexcept override { clear(); }

    // Every callback, dropped (the block stays: one of its callbacks may be running).
    void clear() noexcept {
        data.reset();
        close.reset();
        if (rare_) {
            rare_->eof.reset();
            rare_->drain.reset();
            rare_->high_water.reset();
            rare_->low_water.reset();
        }
    }

private:
    static CallbackProtocol& made(Conn& conn, std::unique_ptr<CallbackProtocol>& owner) {
        if (!owner) owner = std::make_unique<CallbackProtocol>(conn);
        if (conn.protocol() != owner.get()) conn.set_protocol(owner.get());
        return *owner;
    }

    Conn* conn_;
    std::unique_ptr<Rare> rare_;
};

}  // namespace reactor::detail
