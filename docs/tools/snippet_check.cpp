// SPDX-License-Identifier: MIT
// snippet_check: every ```cpp block of README.md and docs/**/*.md is a copy of
// a region of a compiled source file, and stays one (docs/snippets/README.md).
//
//   snippet_check ROOT            check; exit status 1 and one line per problem
//   snippet_check --update ROOT   rewrite the blocks from their regions
//
// A block is checked when its fence's info string starts with cpp, c++ or cxx.
// The last non-blank line before its opening fence must be
//     <!-- snippet: docs/snippets/FILE.cpp NAME -->
// and NAME's region in FILE is the lines between `// [snippet:NAME]` and
// `// [end-snippet:NAME]`, without marker lines of other (nested) regions,
// without leading and trailing blank lines and trailing spaces, and without
// the indentation its lines have in common. The block must hold exactly those
// lines (indented like its fence, when the fence is indented inside a list).
// Plain C++ with the standard library only: the test build runs it as the
// CTest test docs_snippets.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Lines = std::vector<std::string>;

constexpr std::string_view kSnippetDir = "docs/snippets/";

struct Problem {
    std::string where;  // "README.md:42"
    std::string what;
};

std::vector<Problem> problems;

void report(const std::string& file, std::size_t line, std::string what) {
    problems.push_back({file + ":" + std::to_string(line), std::move(what)});
}

std::optional<Lines> read_lines(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    Lines lines;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

std::string rstrip(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
    return s;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::size_t leading_spaces(std::string_view s) {
    std::size_t n = 0;
    while (n < s.size() && s[n] == ' ') ++n;
    return n;
}

bool blank(std::string_view s) { return trim(s).empty(); }

// ---- the source side: regions between marker comments

const std::regex kMarker(R"(// \[(end-)?snippet:([^\]]+)\])");

// The region `name` of `lines`, cleaned as described at the top; an error
// message instead when the markers are missing or repeated.
std::variant<Lines, std::string> extract_region(const Lines& lines, const std::string& name) {
    const std::string begin = "// [snippet:" + name + "]";
    const std::string end = "// [end-snippet:" + name + "]";
    std::optional<std::size_t> first, last;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::string_view t = trim(lines[i]);
        if (t == begin) {
            if (first) return "region '" + name + "' begins twice (lines " + std::to_string(*first + 1) + " and " +
                              std::to_string(i + 1) + ")";
            first = i;
        } else if (t == end) {
            if (last) return "region '" + name + "' ends twice";
            last = i;
        }
    }
    if (!first) return "no line '" + begin + "'";
    if (!last) return "no line '" + end + "'";
    if (*last < *first) return "region '" + name + "' ends before it begins";

    Lines region;
    for (std::size_t i = *first + 1; i < *last; ++i) {
        std::string t(trim(lines[i]));
        if (std::regex_match(t, kMarker)) continue;  // a nested region's marker
        region.push_back(rstrip(lines[i]));
    }
    while (!region.empty() && region.front().empty()) region.erase(region.begin());
    while (!region.empty() && region.back().empty()) region.pop_back();
    std::size_t indent = std::string::npos;
    for (const std::string& l : region)
        if (!l.empty()) indent = std::min(indent, leading_spaces(l));
    for (std::string& l : region)
        if (!l.empty()) l.erase(0, indent);
    if (region.empty()) return "region '" + name + "' is empty";
    return region;
}

// ---- the Markdown side: fenced blocks

struct Fence {
    char ch;
    std::size_t length;
    std::size_t indent;
    std::string info;
};

std::optional<Fence> opening_fence(std::string_view line) {
    std::size_t indent = leading_spaces(line);
    std::string_view rest = line.substr(indent);
    if (rest.empty() || (rest[0] != '`' && rest[0] != '~')) return std::nullopt;
    char ch = rest[0];
    std::size_t n = 0;
    while (n < rest.size() && rest[n] == ch) ++n;
    if (n < 3) return std::nullopt;
    std::string_view info = trim(rest.substr(n));
    if (ch == '`' && info.find('`') != std::string_view::npos) return std::nullopt;  // inline code, not a fence
    return Fence{ch, n, indent, std::string(info)};
}

bool closes(const Fence& fence, std::string_view line) {
    std::string_view t = trim(line);
    std::size_t n = 0;
    while (n < t.size() && t[n] == fence.ch) ++n;
    return n >= fence.length && n == t.size();
}

bool is_cpp(const std::string& info) {
    std::string word = info.substr(0, info.find_first_of(" \t{"));
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
    return word == "cpp" || word == "c++" || word == "cxx";
}

const std::regex kDirective(R"(<!--\s*snippet:\s*(\S+)\s+(\S+)\s*-->)");

struct Source {
    bool read = false;
    std::optional<Lines> lines;
};

// Checks (or, with `update`, rewrites) the blocks of one Markdown file.
// Returns true when the file's text changed.
bool process(const fs::path& root, const std::string& rel, bool update, std::map<std::string, Source>& sources,
             std::size_t& blocks) {
    std::optional<Lines> doc = read_lines(root / rel);
    if (!doc) {
        report(rel, 0, "cannot read");
        return false;
    }
    Lines out;
    bool changed = false;
    const Lines& lines = *doc;
    std::optional<std::size_t> unused_directive;  // a snippet line no C++ block has claimed yet
    auto check_unused = [&] {
        if (unused_directive) report(rel, *unused_directive + 1, "snippet line not followed by a ```cpp block");
        unused_directive.reset();
    };
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::optional<Fence> fence = opening_fence(lines[i]);
        out.push_back(lines[i]);
        if (!fence) {
            if (std::regex_match(std::string(trim(lines[i])), kDirective)) {
                check_unused();
                unused_directive = i;
            }
            continue;
        }
        std::size_t open = i;
        std::size_t close = open + 1;
        while (close < lines.size() && !closes(*fence, lines[close])) ++close;
        Lines body(lines.begin() + static_cast<std::ptrdiff_t>(open + 1),
                   lines.begin() + static_cast<std::ptrdiff_t>(std::min(close, lines.size())));
        auto keep_body = [&] {
            out.insert(out.end(), body.begin(), body.end());
            if (close < lines.size()) out.push_back(lines[close]);
            i = close;
        };
        if (!is_cpp(fence->info)) {
            check_unused();
            keep_body();
            continue;
        }
        ++blocks;
        const std::size_t line_no = open + 1;
        if (close >= lines.size()) report(rel, line_no, "code block never closed");

        std::size_t prev = open;
        while (prev > 0 && blank(lines[prev - 1])) --prev;
        std::smatch m;
        std::string directive = prev > 0 ? std::string(trim(lines[prev - 1])) : "";
        if (prev == 0 || !std::regex_match(directive, m, kDirective)) {
            check_unused();  // a snippet line further up, with text between it and this block
            report(rel, line_no,
                   "C++ block without a '<!-- snippet: docs/snippets/FILE.cpp NAME -->' line before it");
            keep_body();
            continue;
        }
        const std::string path = m[1], name = m[2];
        unused_directive.reset();
        if (path.rfind(kSnippetDir, 0) != 0 || path.find("..") != std::string::npos || !path.ends_with(".cpp")) {
            report(rel, line_no, "snippet source '" + path + "' is not a docs/snippets/*.cpp file (only those are compiled)");
            keep_body();
            continue;
        }
        Source& src = sources[path];
        if (!src.read) {
            src.read = true;
            src.lines = read_lines(root / path);
        }
        if (!src.lines) {
            report(rel, line_no, "snippet source '" + path + "' does not exist");
            keep_body();
            continue;
        }
        auto region = extract_region(*src.lines, name);
        if (const std::string* error = std::get_if<std::string>(&region)) {
            report(rel, line_no, path + ": " + *error);
            keep_body();
            continue;
        }
        const Lines& want = std::get<Lines>(region);

        Lines have;
        for (const std::string& l : body) {
            std::size_t cut = std::min(leading_spaces(l), fence->indent);
            have.push_back(rstrip(l.substr(cut)));
        }
        if (have == want) {
            keep_body();
            continue;
        }
        if (update) {
            for (const std::string& l : want) out.push_back(l.empty() ? l : std::string(fence->indent, ' ') + l);
            if (close < lines.size()) out.push_back(lines[close]);
            i = close;
            changed = true;
            std::printf("%s:%zu: updated from %s [%s]\n", rel.c_str(), line_no, path.c_str(), name.c_str());
            continue;
        }
        std::size_t k = 0;
        while (k < have.size() && k < want.size() && have[k] == want[k]) ++k;
        std::ostringstream what;
        what << "block differs from " << path << " [" << name << "] at its line " << k + 1 << ":\n"
             << "    doc:    " << (k < have.size() ? have[k] : std::string("(block ends)")) << "\n"
             << "    source: " << (k < want.size() ? want[k] : std::string("(region ends)"));
        report(rel, line_no + 1 + k, what.str());
        keep_body();
    }
    check_unused();
    if (changed) {
        std::ofstream o(root / rel, std::ios::binary | std::ios::trunc);
        for (const std::string& l : out) o << l << '\n';
        if (!o) report(rel, 0, "cannot write");
    }
    return changed;
}

}  // namespace

int main(int argc, char** argv) {
    bool update = false;
    std::optional<fs::path> root;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--update") {
            update = true;
        } else if (!arg.empty() && arg[0] != '-' && !root) {
            root = fs::path(arg);
        } else {
            std::fprintf(stderr, "usage: snippet_check [--update] SOURCE_DIR\n");
            return 2;
        }
    }
    if (!root) {
        std::fprintf(stderr, "usage: snippet_check [--update] SOURCE_DIR\n");
        return 2;
    }

    std::vector<std::string> docs{"README.md"};
    std::error_code ec;
    for (fs::recursive_directory_iterator it(*root / "docs", ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file() && it->path().extension() == ".md")
            docs.push_back(fs::relative(it->path(), *root).generic_string());
    if (ec) report("docs", 0, "cannot list: " + ec.message());
    std::sort(docs.begin() + 1, docs.end());

    std::map<std::string, Source> sources;
    std::size_t blocks = 0;
    for (const std::string& doc : docs) process(*root, doc, update, sources, blocks);

    for (const Problem& p : problems) std::fprintf(stderr, "%s: %s\n", p.where.c_str(), p.what.c_str());
    if (!problems.empty()) {
        std::fprintf(stderr, "%zu problem(s) in %zu C++ block(s) of %zu Markdown file(s)%s\n", problems.size(),
                     blocks, docs.size(),
                     update ? "" : "; after editing docs/snippets/*.cpp, `cmake --build BUILD --target "
                                   "docs_snippets_update` rewrites the blocks");
        return 1;
    }
    std::printf("%zu C++ block(s) in %zu Markdown file(s) match their snippets\n", blocks, docs.size());
    return 0;
}
