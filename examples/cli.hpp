// A tiny command-line parser shared by the examples: declare options with
// defaults and help text, then parse. `--help` prints usage and exits 0; an
// unknown option or a malformed value prints an error and exits 2.
// Accepts `--name value` and `--name=value`.
#pragma once

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace examples {

class Cli {
public:
    Cli(std::string program, std::string description)
        : program_(std::move(program)), description_(std::move(description)) {}

    // Declares --name with a default value (as text) and a help line.
    Cli& option(const std::string& name, const std::string& default_value, const std::string& help) {
        options_.push_back({name, default_value, help});
        values_[name] = default_value;
        return *this;
    }

    void parse(int argc, char** argv) {
        for (int i = 1; i < argc; ++i) {
            std::string arg = argv[i];
            if (arg == "--help" || arg == "-h") {
                fmt::print("{}", usage());
                std::exit(0);
            }
            if (arg.rfind("--", 0) != 0) fail(fmt::format("unexpected argument '{}'", arg));
            std::string name = arg.substr(2), value;
            if (auto eq = name.find('='); eq != std::string::npos) {
                value = name.substr(eq + 1);
                name.resize(eq);
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                fail(fmt::format("option --{} needs a value", name));
            }
            if (!values_.count(name)) fail(fmt::format("unknown option --{}", name));
            values_[name] = value;
        }
    }

    std::string text(const std::string& name) const { return values_.at(name); }

    long integer(const std::string& name) const {
        const std::string& v = values_.at(name);
        try {
            std::size_t used = 0;
            long n = std::stol(v, &used);
            if (used == v.size()) return n;
        } catch (const std::exception&) {
        }
        fail(fmt::format("--{} expects an integer, got '{}'", name, v));
    }

    double number(const std::string& name) const {
        const std::string& v = values_.at(name);
        try {
            std::size_t used = 0;
            double x = std::stod(v, &used);
            if (used == v.size()) return x;
        } catch (const std::exception&) {
        }
        fail(fmt::format("--{} expects a number, got '{}'", name, v));
    }

    std::string usage() const {
        std::string out = fmt::format("usage: {} [options]\n\n{}\n\noptions:\n", program_, description_);
        for (const auto& o : options_) out += fmt::format("  --{:<12} {} (default: {})\n", o.name, o.help, o.default_value);
        out += fmt::format("  --{:<12} {}\n", "help", "show this help and exit");
        return out;
    }

    [[noreturn]] void fail(const std::string& message) const {
        fmt::print(stderr, "{}: {}\n(try --help)\n", program_, message);
        std::exit(2);
    }

private:
    struct Option {
        std::string name, default_value, help;
    };
    std::string program_, description_;
    std::vector<Option> options_;
    std::map<std::string, std::string> values_;
};

}  // namespace examples
