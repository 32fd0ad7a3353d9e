#include "cli/command_line.h"

#include <CLI/CLI.hpp>
#include <iostream>

namespace loadwatch {

Flag& Flag::required() {
  option_->required();
  return *this;
}

Flag& Flag::capture_default() {
  option_->capture_default_str();
  return *this;
}

Flag& Flag::one_value_each() {
  option_->allow_extra_args(false);
  return *this;
}

Flag& Flag::take_all() {
  option_->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return *this;
}

Flag& Flag::range(int low, int high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

Flag& Flag::range(long long low, long long high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

Flag& Flag::range(std::size_t low, std::size_t high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

Flag& Flag::range(double low, double high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

Flag& Flag::check(std::function<std::string(std::string&)> check, const std::string& what) {
  option_->check(CLI::Validator(std::move(check), what));
  return *this;
}

std::size_t Flag::count() const { return option_->count(); }

CommandLine::CommandLine(const std::string& description, const std::string& name)
    : owned_(std::make_unique<CLI::App>(description, name)), app_(owned_.get()) {}

CommandLine::CommandLine(CLI::App* app) : app_(app) {}

CommandLine::~CommandLine() = default;

Flag CommandLine::option(const std::string& name, std::string& into, const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::option(const std::string& name, std::vector<std::string>& into,
                         const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::option(const std::string& name, int& into, const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::option(const std::string& name, long long& into, const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::option(const std::string& name, std::size_t& into, const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::option(const std::string& name, double& into, const std::string& help) {
  return Flag(app_->add_option(name, into, help));
}

Flag CommandLine::flag(const std::string& name, bool& into, const std::string& help) {
  return Flag(app_->add_flag(name, into, help));
}

void CommandLine::capture_defaults() { app_->option_defaults()->always_capture_default(); }

void CommandLine::footer(const std::string& text) { app_->footer(text); }

CommandLine& CommandLine::subcommand(const std::string& name, const std::string& description) {
  subcommands_.push_back(
      std::unique_ptr<CommandLine>(new CommandLine(app_->add_subcommand(name, description))));
  return *subcommands_.back();
}

void CommandLine::require_subcommand() { app_->require_subcommand(1); }

bool CommandLine::parsed() const { return app_->parsed(); }

std::optional<int> CommandLine::parse(int argc, char** argv) {
  return parse(argc, argv, std::cout, std::cerr);
}

std::optional<int> CommandLine::parse(int argc, char** argv, std::ostream& out, std::ostream& err) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_->exit(e, out, err);
  }
  return std::nullopt;
}

int CommandLine::fail(const std::string& flag, const std::string& message) {
  return app_->exit(CLI::ValidationError(flag, message));
}

}  // namespace loadwatch
