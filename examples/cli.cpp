// SPDX-License-Identifier: MIT
// cli.hpp's façade, the one translation unit that includes CLI11: its
// templates (the App, the parsing of every value type, the validators) are
// compiled here once instead of in every example, which took about 9 s of
// each example's build. CLI11 does all the parsing, so the help and the
// errors are CLI11's own.
#include "cli.hpp"

#include <cmath>
#include <cstdlib>
#include <utility>

#include <CLI/CLI.hpp>

namespace examples {

namespace {

// A finite number within [low, high]: "nan", "inf" and "-1" are refused
// where a delay, a speed or a duration is expected.
Check finite_in(double low, double high, std::string what) {
    return Check(std::make_shared<const CLI::Validator>(
        [=](std::string& text) -> std::string {
            double value = 0;
            bool ok = CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value >= low && value <= high;
            if (ok) return {};
            return fmt::format("must be {}, not '{}'", what, text);
        },
        ""));
}

template <class T>
Check range_of(T low, T high) {
    return Check(std::make_shared<const CLI::Validator>(CLI::Range(low, high)));
}

}  // namespace

Check range(int low, int high) { return range_of(low, high); }
Check range(long low, long high) { return range_of(low, high); }
Check range(std::size_t low, std::size_t high) { return range_of(low, high); }

const Check positive = finite_in(1e-9, 1e9, "a positive number");
const Check seconds = finite_in(0, 1e9, "a number of seconds, 0 or more");
const Check non_negative(std::make_shared<const CLI::Validator>(CLI::NonNegativeNumber));
const Check existing_file(std::make_shared<const CLI::Validator>(CLI::ExistingFile));

Check one_of(std::vector<std::string> words) {
    return Check(std::make_shared<const CLI::Validator>(CLI::IsMember(std::move(words))));
}

Option* Option::check(const Check& rule) {
    option_->check(rule.validator());
    return this;
}

Option* Option::required() {
    option_->required();
    return this;
}

Option* Option::default_str(const std::string& text) {
    option_->default_str(text);
    return this;
}

Cli::Cli(std::string program, std::string description)
    : app_(std::make_unique<CLI::App>(std::move(description), std::move(program))) {
    app_->option_defaults()->always_capture_default();
    app_->allow_extras();  // reported by parse_or_exit, in our words
}

Cli::~Cli() = default;

Option* Cli::keep(CLI::Option* option) { return &options_.emplace_back(option); }

Option* Cli::add_option(const std::string& name, int& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, long& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, std::size_t& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, std::uint16_t& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, std::uint32_t& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, double& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, std::string& value, const std::string& description) {
    return keep(app_->add_option(name, value, description));
}
Option* Cli::add_option(const std::string& name, std::vector<std::string>& values, const std::string& description) {
    return keep(app_->add_option(name, values, description));
}

Option* Cli::add_option_function(const std::string& name, std::function<void(const std::string&)> apply,
                                 const std::string& description) {
    return keep(app_->add_option_function<std::string>(name, std::move(apply), description));
}

Option* Cli::add_flag(const std::string& name, bool& value, const std::string& description) {
    return keep(app_->add_flag(name, value, description));
}

void Cli::parse_or_exit(int argc, char** argv) {
    try {
        app_->parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        std::exit(app_->exit(e));  // the usage, on stdout; 0
    } catch (const CLI::ParseError& e) {
        fail(e.what());
    }
    if (const auto& extra = app_->remaining(); !extra.empty()) {
        const std::string& first = extra.front();
        fail(first.starts_with("-") ? fmt::format("unknown option {}", first)
                                    : fmt::format("unexpected argument '{}'", first));
    }
}

void Cli::fail(const std::string& message) const {
    fmt::print(stderr, "{}: {}\n(try --help)\n", get_name(), message);
    std::exit(2);
}

const std::string& Cli::get_name() const { return app_->get_name(); }

}  // namespace examples
