#pragma once
// A command line's options and flags, parsed by CLI11 behind this small interface. CLI11 2.1 is
// header only: every file that includes it compiles its validators, help formatter and config
// reader again (about 7 s of CPU), so only command_line.cpp includes it and the daemon's flags
// and every subcommand declare theirs here. Help, messages and exit codes are CLI11's.

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace loadwatch {

/// One declared option, flag or positional argument; its settings chain.
class Flag {
 public:
  explicit Flag(CLI::Option* option) : option_(option) {}

  Flag& required();
  /// Shows the initial value in --help.
  Flag& capture_default();
  /// One value per occurrence: `--label a b` is not two labels, a command after -- stays whole.
  Flag& one_value_each();
  /// Every occurrence's values kept, in order (a repeatable option).
  Flag& take_all();
  /// A value outside [low, high] is a usage error; the type is the one --help names.
  Flag& range(int low, int high);
  Flag& range(long long low, long long high);
  Flag& range(std::size_t low, std::size_t high);
  Flag& range(double low, double high);
  /// `check` returns an empty string for a good value, else what is wrong; `what` names the
  /// expected form in --help (e.g. KEY=VALUE).
  Flag& check(std::function<std::string(std::string&)> check, const std::string& what);
  /// How often it was given.
  std::size_t count() const;

 private:
  CLI::Option* option_;
};

/// A command or one of its subcommands. Not copyable; a subcommand belongs to its parent.
class CommandLine {
 public:
  CommandLine(const std::string& description, const std::string& name);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  Flag option(const std::string& name, std::string& into, const std::string& help);
  Flag option(const std::string& name, std::vector<std::string>& into, const std::string& help);
  Flag option(const std::string& name, int& into, const std::string& help);
  Flag option(const std::string& name, long long& into, const std::string& help);
  Flag option(const std::string& name, std::size_t& into, const std::string& help);
  Flag option(const std::string& name, double& into, const std::string& help);
  Flag flag(const std::string& name, bool& into, const std::string& help);

  /// Every option declared after this shows its initial value in --help.
  void capture_defaults();
  void footer(const std::string& text);
  CommandLine& subcommand(const std::string& name, const std::string& description);
  void require_subcommand();
  /// This subcommand was given.
  bool parsed() const;

  /// Parses argv. nullopt to go on; else the exit code after --help (0, the help on `out`) or a
  /// bad command line (the error on `err`), as CLI11 prints and numbers them.
  std::optional<int> parse(int argc, char** argv);
  std::optional<int> parse(int argc, char** argv, std::ostream& out, std::ostream& err);
  /// A check made after parsing failed: prints it as a bad value of `flag` (on stderr) and
  /// returns CLI11's exit code for that.
  int fail(const std::string& flag, const std::string& message);

 private:
  explicit CommandLine(CLI::App* app);

  std::unique_ptr<CLI::App> owned_;  // the top command's; a subcommand's App is its parent's
  CLI::App* app_;
  std::vector<std::unique_ptr<CommandLine>> subcommands_;
};

}  // namespace loadwatch
