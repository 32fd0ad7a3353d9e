#pragma once
// Names the calling thread, so `ps -L`, top and /proc/PID/task/TID/comm tell the daemon's
// threads apart.

namespace loadwatch {

/// The kernel keeps 15 characters; a longer name is cut there. Failure is ignored: a name
/// is a courtesy, never a reason to stop.
void name_this_thread(const char* name);

}  // namespace loadwatch
