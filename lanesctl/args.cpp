// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/args.hpp"

#include "core/lanes_toml.hpp"

#include <cctype>
#include <charconv>
#include <set>
#include <string_view>

namespace lanes::ctl {

namespace {

// One option: which subcommands accept it, whether it takes a value, and how to store it.
struct OptionSpec {
    std::string_view name;
    enum class Arg { None, Required, Optional } arg;
    std::vector<Command> commands;  // empty: global (every subcommand, and before it)
    bool repeatable;
    std::function<Result<void>(Options&, const std::string& value)> store;
    // A global option (lanesctl(8), GLOBAL OPTIONS) that only some subcommands
    // use (--node): it may come before the subcommand, checked once that is known.
    bool global_for_some = false;
};

Result<uint32_t> parse_job_id(std::string_view option, const std::string& text) {
    uint32_t id = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id == 0)
        return fail(std::string(option) + ": '" + text + "' is not a job id (a positive integer)");
    return id;
}

Result<void> store_string(std::string& field, std::string_view option, const std::string& value) {
    if (value.empty()) return fail(std::string(option) + ": the value is empty");
    field = value;
    return {};
}

const std::vector<OptionSpec>& option_table() {
    using A = OptionSpec::Arg;
    using C = Command;
    static const std::vector<OptionSpec> table = {
        {"--config",
         A::Required,
         {},
         false,
         [](Options& o, const std::string& v) { return store_string(o.config, "--config", v); }},
        {"--json",
         A::None,
         {},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.json = true;
             return {};
         }},
        {"--help",
         A::None,
         {},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.help = true;
             return {};
         }},
        {"--version",
         A::None,
         {},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.version = true;
             return {};
         }},
        {"--node",
         A::Required,
         {C::Status, C::Gc, C::Check, C::Reapply, C::Agent},
         false,
         [](Options& o, const std::string& v) { return store_string(o.node, "--node", v); },
         true},
        {"--job",
         A::Required,
         {C::PolicyTest},
         true,
         [](Options& o, const std::string& v) -> Result<void> {
             auto id = parse_job_id("--job", v);
             if (!id) return std::unexpected(id.error());
             o.job_ids.push_back(*id);
             return {};
         }},
        {"--fixtures",
         A::Required,
         {C::PolicyTest},
         false,
         [](Options& o, const std::string& v) { return store_string(o.fixtures_dir, "--fixtures", v); }},
        {"--at",
         A::Required,
         {C::PolicyTest},
         false,
         [](Options& o, const std::string& v) { return store_string(o.at, "--at", v); }},
        {"--admin",
         A::None,
         {C::PolicyTest},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.as_admin = true;
             return {};
         }},
        {"--from",
         A::Required,
         {C::Windows, C::Report},
         false,
         [](Options& o, const std::string& v) { return store_string(o.from, "--from", v); }},
        {"--days",
         A::Required,
         {C::Windows},
         false,
         [](Options& o, const std::string& v) -> Result<void> {
             int days = 0;
             auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), days);
             if (v.empty() || ec != std::errc() || end != v.data() + v.size() || days < 1 || days > 366)
                 return fail("--days: '" + v + "' is not a number of days (1..366)");
             o.days = days;
             return {};
         }},
        {"--window",
         A::Required,
         {C::Windows, C::Report},
         true,
         [](Options& o, const std::string& v) -> Result<void> {
             if (v.empty()) return fail("--window: the value is empty");
             o.window_names.push_back(v);
             return {};
         }},
        {"--reservations",
         A::Optional,
         {C::Windows},
         false,
         [](Options& o, const std::string& v) -> Result<void> {
             o.reservations = true;
             o.reservation_nodes = v;
             return {};
         }},
        {"--reservation-accounts",
         A::Required,
         {C::Windows},
         false,
         [](Options& o, const std::string& v) {
             return store_string(o.reservation_accounts, "--reservation-accounts", v);
         }},
        {"--reservation-users",
         A::Required,
         {C::Windows},
         false,
         [](Options& o, const std::string& v) { return store_string(o.reservation_users, "--reservation-users", v); }},
        {"--apply",
         A::None,
         {C::Windows},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.apply = true;
             return {};
         }},
        {"--prometheus",
         A::Required,
         {C::Status, C::Report},
         false,
         [](Options& o, const std::string& v) { return store_string(o.prometheus_file, "--prometheus", v); }},
        {"--noheader",
         A::None,
         {C::Status, C::Windows, C::Report},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.noheader = true;
             return {};
         }},
        {"--parsable",
         A::None,
         {C::Status, C::Windows, C::Report},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.parsable = true;
             return {};
         }},
        {"--to",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) { return store_string(o.to, "--to", v); }},
        {"--step",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) -> Result<void> {
             auto d = parse_duration(v);
             if (!d || d->count() < 1000000 || d->count() % 1000000 != 0)
                 return fail("--step: '" + v + "' is not a whole number of seconds (\"30s\", \"15min\", \"1h\")");
             o.report_step = std::chrono::duration_cast<std::chrono::seconds>(*d);
             return {};
         }},
        {"--slo",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) -> Result<void> {
             auto d = parse_duration(v);
             if (!d || d->count() <= 0) return fail("--slo: '" + v + "' is not a latency (\"50ms\", \"1.5s\")");
             o.slo_seconds = static_cast<double>(d->count()) / 1e6;
             return {};
         }},
        {"--class",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) { return store_string(o.report_class, "--class", v); }},
        {"--latency-metric",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) -> Result<void> {
             for (char c : v)
                 if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'))
                     return fail("--latency-metric: '" + v + "' is not a Prometheus metric name");
             return store_string(o.latency_metric, "--latency-metric", v);
         }},
        {"--plot",
         A::Required,
         {C::Report},
         false,
         [](Options& o, const std::string& v) { return store_string(o.plot_file, "--plot", v); }},
        {"--dry-run",
         A::None,
         {C::Gc, C::Reapply},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.dry_run = true;
             return {};
         }},
        {"--all",
         A::None,
         {C::Gc},
         false,
         [](Options& o, const std::string&) -> Result<void> {
             o.all = true;
             return {};
         }},
    };
    return table;
}

const OptionSpec* find_option(std::string_view name) {
    for (const auto& spec : option_table())
        if (spec.name == name) return &spec;
    return nullptr;
}

bool accepts(const OptionSpec& spec, Command command) {
    if (spec.commands.empty()) return true;
    for (Command c : spec.commands)
        if (c == command) return true;
    return false;
}

std::string where(Command command) {
    if (command == Command::None) return "before the subcommand";
    return std::string("for '") + command_name(command) + "'";
}

}  // namespace

const char* command_name(Command command) {
    switch (command) {
        case Command::Check: return "check";
        case Command::PolicyTest: return "policy test";
        case Command::Windows: return "windows";
        case Command::Status: return "status";
        case Command::Gc: return "gc";
        case Command::Reapply: return "reconcile";
        case Command::Signals: return "signals";
        case Command::Agent: return "agent";
        case Command::Rate: return "rate";
        case Command::Report: return "report";
        case Command::None: break;
    }
    return "";
}

CompletionTable completion_table() {
    static constexpr Command kCommands[] = {Command::Check, Command::PolicyTest, Command::Windows, Command::Status,
                                            Command::Gc,    Command::Reapply,    Command::Signals, Command::Agent,
                                            Command::Rate,  Command::Report};
    CompletionTable table;
    for (Command c : kCommands) table.commands.emplace_back(command_name(c));
    for (const OptionSpec& spec : option_table()) {
        if (spec.commands.empty()) table.global_options.emplace_back(spec.name);
        if (spec.arg == OptionSpec::Arg::Required) table.value_options.emplace_back(spec.name);
    }
    for (Command c : kCommands) {
        std::vector<std::string> own;
        for (const OptionSpec& spec : option_table())
            if (!spec.commands.empty() && accepts(spec, c)) own.emplace_back(spec.name);
        if (c == Command::Reapply) {  // its older name, still accepted
            table.commands.emplace_back("reapply");
            table.command_options.emplace_back("reapply", own);
        }
        table.command_options.emplace_back(command_name(c), std::move(own));
    }
    return table;
}

Result<Options> parse_args(const std::vector<std::string>& args) {
    Options options;
    std::set<std::string_view> seen;
    std::vector<const OptionSpec*> early;  // global_for_some options seen before the subcommand
    bool options_ended = false;            // after "--" everything is positional
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (!options_ended && arg == "--") {
            options_ended = true;
            continue;
        }
        if (!options_ended && arg.size() > 1 && arg[0] == '-') {
            if (arg == "-h") {
                options.help = true;
                continue;
            }
            if (arg == "-V") {
                options.version = true;
                continue;
            }
            if (arg[1] != '-') return fail("unknown option '" + arg + "' (options are spelled --name)");
            auto eq = arg.find('=');
            std::string name = arg.substr(0, eq);
            const OptionSpec* spec = find_option(name);
            if (!spec) return fail("unknown option '" + name + "' " + where(options.command));
            // Subcommand options are accepted only after their subcommand; a
            // global one used by some subcommands only is checked at the end.
            if (spec->global_for_some && options.command == Command::None) early.push_back(spec);
            else if (!accepts(*spec, options.command) || (!spec->commands.empty() && options.command == Command::None))
                return fail("option '" + name + "' is not valid " + where(options.command));
            if (!spec->repeatable && !seen.insert(spec->name).second) return fail("option '" + name + "' given twice");
            std::string value;
            switch (spec->arg) {
                case OptionSpec::Arg::None:
                    if (eq != std::string::npos) return fail("option '" + name + "' takes no value");
                    break;
                case OptionSpec::Arg::Required:
                    if (eq != std::string::npos) {
                        value = arg.substr(eq + 1);
                    } else {
                        if (i + 1 >= args.size()) return fail("option '" + name + "' needs a value");
                        value = args[++i];
                    }
                    break;
                case OptionSpec::Arg::Optional:
                    // "--opt=VALUE", or "--opt VALUE" when the next word is not an option
                    // (only for subcommands without positional arguments).
                    if (eq != std::string::npos) {
                        value = arg.substr(eq + 1);
                        if (value.empty()) return fail("option '" + name + "=': the value is empty");
                    } else if (i + 1 < args.size() && !args[i + 1].starts_with("-")) {
                        value = args[++i];
                    }
                    break;
            }
            auto stored = spec->store(options, value);
            if (!stored) return std::unexpected(stored.error());
            continue;
        }
        // A word: the subcommand, or a positional argument of it.
        switch (options.command) {
            case Command::None:
                if (arg == "check") {
                    options.command = Command::Check;
                } else if (arg == "windows") {
                    options.command = Command::Windows;
                } else if (arg == "status") {
                    options.command = Command::Status;
                } else if (arg == "gc") {
                    options.command = Command::Gc;
                } else if (arg == "reapply" || arg == "reconcile") {
                    options.command = Command::Reapply;
                } else if (arg == "signals") {
                    options.command = Command::Signals;
                } else if (arg == "agent") {
                    options.command = Command::Agent;
                } else if (arg == "rate") {
                    options.command = Command::Rate;
                } else if (arg == "report") {
                    options.command = Command::Report;
                } else if (arg == "policy") {
                    if (i + 1 >= args.size() || args[i + 1] != "test")
                        return fail(i + 1 >= args.size() ? "'policy' needs a subcommand: 'policy test'"
                                                         : "unknown subcommand 'policy " + args[i + 1] +
                                                               "' (did you mean 'policy test'?)");
                    ++i;
                    options.command = Command::PolicyTest;
                } else if (arg == "help") {
                    options.help = true;
                    // "lanesctl help windows": help for that subcommand.
                    if (i + 1 < args.size()) {
                        const std::string& topic = args[++i];
                        if (topic == "check") options.command = Command::Check;
                        else if (topic == "windows") options.command = Command::Windows;
                        else if (topic == "status") options.command = Command::Status;
                        else if (topic == "gc") options.command = Command::Gc;
                        else if (topic == "reapply" || topic == "reconcile") options.command = Command::Reapply;
                        else if (topic == "signals") options.command = Command::Signals;
                        else if (topic == "agent") options.command = Command::Agent;
                        else if (topic == "rate") options.command = Command::Rate;
                        else if (topic == "report") options.command = Command::Report;
                        else if (topic == "policy") {
                            options.command = Command::PolicyTest;
                            if (i + 1 < args.size() && args[i + 1] == "test") ++i;
                        } else {
                            return fail("unknown subcommand '" + topic + "' after 'help'");
                        }
                    }
                    if (i + 1 < args.size()) return fail("unexpected argument '" + args[i + 1] + "' after 'help'");
                } else {
                    return fail("unknown subcommand '" + arg + "'");
                }
                break;
            case Command::PolicyTest: options.job_files.push_back(arg); break;
            case Command::Rate: options.rates.push_back(arg); break;
            default: return fail("unexpected argument '" + arg + "' for '" + command_name(options.command) + "'");
        }
    }
    if (options.help || options.version) return options;
    if (options.command == Command::None)
        return fail(
            "no subcommand given (check, policy test, windows, status, gc, reconcile, signals, agent, rate, report)");
    for (const OptionSpec* spec : early)
        if (!accepts(*spec, options.command))
            return fail("option '" + std::string(spec->name) + "' is not valid for '" + command_name(options.command) +
                        "'");
    if (options.command == Command::PolicyTest) {
        int modes = (options.job_files.empty() ? 0 : 1) + (options.job_ids.empty() ? 0 : 1) +
                    (options.fixtures_dir.empty() ? 0 : 1);
        if (modes == 0) return fail("'policy test' needs JOB.json files, --job ID or --fixtures DIR");
        if (modes > 1) return fail("'policy test': give JOB.json files, --job ID or --fixtures DIR, not several");
        if (!options.fixtures_dir.empty() && !options.at.empty())
            return fail("option '--at' is not valid with '--fixtures' (each fixture has its own \"at\")");
    }
    if (options.command == Command::Rate && options.rates.empty()) return fail("'rate' needs a RATE");
    if (options.command == Command::Rate && options.json) return fail("option '--json' is not valid for 'rate'");
    if (options.json && (options.parsable || options.noheader))
        return fail(std::string("option '") + (options.parsable ? "--parsable" : "--noheader") +
                    "' is not valid with '--json'");
    if (options.command == Command::Report && options.slo_seconds <= 0)
        return fail("'report' needs --slo DURATION (the inference latency objective, e.g. --slo 50ms)");
    if (options.command == Command::Report && options.prometheus_file.empty())
        return fail("'report' needs --prometheus URL or --prometheus SIGNAL (a [signals.NAME] of lanes.toml)");
    if (options.command == Command::Windows && options.noheader && !options.parsable)
        return fail("option '--noheader' needs '--parsable' for 'windows' (the calendar has no header line)");
    if (options.command == Command::Windows && options.parsable && options.reservations)
        return fail("option '--parsable' is not valid with '--reservations' (it prints commands)");
    if (options.command == Command::Windows && !options.reservations &&
        (!options.reservation_accounts.empty() || !options.reservation_users.empty()))
        return fail("options '--reservation-accounts' and '--reservation-users' need '--reservations'");
    if (options.command == Command::Windows && options.apply && !options.reservations)
        return fail("option '--apply' needs '--reservations' (it creates them)");
    if (options.command == Command::Windows && options.apply && options.json)
        return fail("option '--json' is not valid with '--apply'");
    if (options.command == Command::Windows && options.reservations && options.reservation_accounts.empty() &&
        options.reservation_users.empty())
        return fail(
            "option '--reservations' needs '--reservation-accounts' or '--reservation-users' "
            "(who may run on the reserved nodes)");
    return options;
}

std::string usage_text(Command command) {
    switch (command) {
        case Command::Check:
            return "usage: lanesctl check [--config FILE] [--node NAME] [--json]\n"
                   "  Validate lanes.toml and its Lua policy exactly as the plugins load them.\n"
                   "  --node NAME (root, on that node): also check its [[nodes.nic]] setup.\n"
                   "  Exit 0 when valid, 1 with file:line:col messages when not.\n";
        case Command::PolicyTest:
            return "usage: lanesctl policy test [--config FILE] [--at TIME] [--admin] [--json] JOB.json...\n"
                   "       lanesctl policy test [--config FILE] [--at TIME] [--admin] [--json] --job ID...\n"
                   "       lanesctl policy test [--config FILE] [--json] --fixtures DIR\n"
                   "  Dry-run classification and routing. JOB.json is a job object or a whole fixture\n"
                   "  ({\"job\": {...}, \"at\": ..., \"expect\": {...}}); --job loads a pending or running job\n"
                   "  from slurmctld. --fixtures runs every DIR/*.json and compares with \"expect\".\n"
                   "  TIME: \"2026-12-01 09:00\" (this machine's time zone), \"2026-12-01T09:00+01:00\",\n"
                   "  \"2026-12-01 09:00 Europe/Berlin\", \"... UTC\", \"@1796112000\" or \"now\".\n";
        case Command::Windows:
            return "usage: lanesctl windows [--config FILE] [--from TIME] [--days N] [--window NAME]...\n"
                   "                        [--reservations [NODES] (--reservation-accounts LIST |\n"
                   "                         --reservation-users LIST) [--apply]] [--json | --parsable [--noheader]]\n"
                   "  The upcoming occurrences of each window in its own time zone (DST and exceptions\n"
                   "  applied); with --reservations, one `scontrol create reservation` per occurrence of\n"
                   "  every window a class avoids, on NODES or on the partitions that class borrows;\n"
                   "  --apply creates them in slurmctld (root; those that exist are left alone).\n"
                   "  --parsable prints one occurrence a line, WINDOW|ZONE|BEGIN|END|MINUTES|DST.\n";
        case Command::Status:
            return "usage: lanesctl status [--config FILE] [--node NAME] [--json | --parsable] [--noheader]\n"
                   "                       [--prometheus FILE]\n"
                   "  The jobs Lanes shapes on this node, with their HTB counters per NIC (root).\n"
                   "  --noheader leaves out the node line and the column names; --parsable prints\n"
                   "  '|'-separated fields (as sacct -P). --prometheus writes node_exporter textfile\n"
                   "  metrics atomically.\n";
        case Command::Gc:
            return "usage: lanesctl gc [--config FILE] [--node NAME] [--dry-run] [--all] [--json]\n"
                   "  Remove Lanes' tc classes, nft rules, cgroups and state of jobs that no longer run\n"
                   "  here (root). --all removes everything, including the root qdisc and nft table.\n";
        case Command::Reapply:
            return "usage: lanesctl reconcile|reapply [--config FILE] [--node NAME] [--dry-run] [--json]\n"
                   "  Bring this node's kernel back to every running job's desired state (root): the\n"
                   "  root qdisc, the jobs' classes (a busy ceil included) and leaf qdiscs on every\n"
                   "  selected NIC (a NIC that came up included), the nft table and marks, the GSO\n"
                   "  bound. Prints each repair; does nothing when all is in place; --dry-run only\n"
                   "  checks (exit 1 when something differs). lanes-reconcile.timer runs it.\n";
        case Command::Signals:
            return "usage: lanesctl signals [--config FILE] [--json]\n"
                   "  Query every [signals.NAME] once now and show its value, its age, the last error\n"
                   "  and the state of the windows that follow it. Exit 1 when a signal has no fresh value.\n";
        case Command::Agent:
            return "usage: lanesctl agent [--config FILE] [--node NAME]\n"
                   "  Runs lanes-agent(8) with the same --config and --node (the node agent is its\n"
                   "  own program and unit, lanes-agent.service). `lanesctl status` shows its last\n"
                   "  converge.\n";
        case Command::Rate:
            return "usage: lanesctl rate RATE...\n"
                   "  Check each RATE with the rules lanes.toml and --lanes-cap use and print it as\n"
                   "  bits per second (\"200Mbit\" -> 200000000; \"40%\" stays \"40%\"), one a line, for\n"
                   "  scripts. Exit 1 (naming the rate) when one is not valid, e.g. \"25Mbps\".\n";
        case Command::Report:
            return "usage: lanesctl report [--config FILE] --prometheus URL|SIGNAL --slo DURATION [--from TIME]\n"
                   "                       [--to TIME] [--step DURATION] [--window NAME]... [--class NAME]\n"
                   "                       [--latency-metric NAME] [--plot FILE.png]\n"
                   "                       [--json | --parsable] [--noheader]\n"
                   "  Each stretch between window boundaries (and every --step) from --from (default\n"
                   "  24 hours ago) to --to (now): the bytes and drops of the training class's jobs\n"
                   "  (Lanes' counters) next to the inference p99 and the share of requests within\n"
                   "  --slo (the probe's histogram), all from Prometheus. --plot draws it (gnuplot).\n";
        case Command::None: break;
    }
    return "usage: lanesctl [--config FILE] [--json] SUBCOMMAND [OPTIONS]\n"
           "\n"
           "Subcommands:\n"
           "  check           validate lanes.toml and the Lua policy\n"
           "  policy test     dry-run classification of job files, real jobs or fixtures\n"
           "  windows         upcoming time window occurrences, reservation commands\n"
           "  status          jobs shaped on this node, with counters (root)\n"
           "  gc              remove shaping state of jobs that are gone (root)\n"
           "  reconcile       put back the marks and classes of running jobs (root; alias reapply)\n"
           "  signals         live values of [signals.NAME] and the windows that follow them\n"
           "  agent           run the node agent, lanes-agent(8) (root)\n"
           "  rate            check rates and print them in bits per second (for scripts)\n"
           "  report          training windows next to inference SLO attainment (Prometheus)\n"
           "\n"
           "Global options:\n"
           "  --config FILE   lanes.toml (default: $LANES_CONFIG, else lanes.toml next to\n"
           "                  $SLURM_CONF, else the compiled-in default)\n"
           "  --json          machine-readable output (shapes in lanesctl(8))\n"
           "  --help, -h      this text; `lanesctl SUBCOMMAND --help` for one subcommand\n"
           "  --version, -V   version\n"
           "\n"
           "Exit status: 0 ok, 1 check or test failed, 2 usage error, 3 runtime error.\n";
}

std::string resolve_config_path(const Options& options,
                                const std::function<std::optional<std::string>(const char*)>& getenv,
                                const std::string& compiled_default) {
    if (!options.config.empty()) return options.config;
    if (auto env = getenv("LANES_CONFIG"); env && !env->empty()) return *env;
    if (auto conf = getenv("SLURM_CONF"); conf && !conf->empty()) {
        auto slash = conf->rfind('/');
        if (slash != std::string::npos) return conf->substr(0, slash + 1) + "lanes.toml";
    }
    return compiled_default;
}

}  // namespace lanes::ctl
