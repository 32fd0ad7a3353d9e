#pragma once
// /proc/PID/statm: a process's memory in pages ("size resident shared text lib data dt",
// proc(5)). Its resident is the sum VmRSS of /proc/PID/status is made of (fs/proc/task_mmu.c
// task_statm and task_mem read the same counters the same way), for a fifth of the cost.

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadwatch {

/// The resident pages (second field) of a /proc/PID/statm text; nullopt on malformed text;
/// never throws.
std::optional<std::uint64_t> parse_pid_statm_resident(std::string_view text);

}  // namespace loadwatch
