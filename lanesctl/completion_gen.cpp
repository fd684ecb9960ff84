// SPDX-License-Identifier: GPL-2.0-or-later
// completion_gen: writes lanesctl's bash completion from its template
// (contrib/completions/lanesctl.in) and the option table parse_args() uses, so
// the completion offers every subcommand and option lanesctl accepts, and no
// other. Run by `make`; `completion_gen --table` prints the table for
// tests/pkg/completion_test.sh ("COMMAND|OPTION..." lines, "*" = global).
#include "lanesctl/args.hpp"

#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string join(const std::vector<std::string>& words, const std::string& sep) {
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : sep) + w;
    return out;
}

bool replace(std::string& text, const std::string& key, const std::string& value) {
    const std::string marker = "@" + key + "@";
    auto at = text.find(marker);
    if (at == std::string::npos) return false;
    while (at != std::string::npos) {
        text.replace(at, marker.size(), value);
        at = text.find(marker, at + value.size());
    }
    return true;
}

// A marker left over: "@" then capitals or "_" then "@".
bool has_marker(const std::string& text) {
    for (size_t at = text.find('@'); at != std::string::npos; at = text.find('@', at + 1)) {
        size_t end = at + 1;
        while (end < text.size() && (std::isupper(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
        if (end > at + 1 && end < text.size() && text[end] == '@') return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const lanes::ctl::CompletionTable table = lanes::ctl::completion_table();
    if (argc == 2 && std::string(argv[1]) == "--table") {
        std::cout << "*|" << join(table.global_options, " ") << "\n";
        for (const auto& [command, options] : table.command_options)
            std::cout << command << "|" << join(options, " ") << "\n";
        return 0;
    }
    if (argc != 2) {
        std::cerr << "usage: completion_gen TEMPLATE >lanesctl   |   completion_gen --table\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::cerr << "completion_gen: cannot read " << argv[1] << "\n";
        return 1;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();

    // One-word subcommands go in the case pattern; "policy test" has its own
    // branch in the template (the second word).
    std::vector<std::string> single, first_words;
    for (const std::string& c : table.commands) {
        const std::string first = c.substr(0, c.find(' '));
        first_words.push_back(first);
        if (first == c) single.push_back(c);
        else if (c != "policy test") {
            std::cerr << "completion_gen: the template has no branch for '" << c << "'\n";
            return 1;
        }
    }
    std::string cases;
    for (const auto& [command, options] : table.command_options) {
        std::vector<std::string> words = options;
        words.push_back("$global");
        cases += "        " + (command.find(' ') == std::string::npos ? command : "\"" + command + "\"") + ") opts=\"" +
                 join(words, " ") + "\" ;;\n";
    }
    if (!cases.empty()) cases.pop_back();
    const bool all = replace(text, "GLOBAL_OPTIONS", join(table.global_options, " ")) &&
                     replace(text, "SUBCOMMAND_PATTERN", join(single, " | ")) &&
                     replace(text, "SUBCOMMAND_WORDS", join(first_words, " ")) &&
                     replace(text, "VALUE_OPTIONS_PATTERN", join(table.value_options, " | ")) &&
                     replace(text, "COMMAND_CASES", cases);
    if (!all || has_marker(text)) {
        std::cerr << "completion_gen: " << argv[1] << " lacks a marker or has an unknown one\n";
        return 1;
    }
    std::cout << text;
    return 0;
}
