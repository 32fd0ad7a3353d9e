#pragma once

namespace loadwatch::report {

/// `loadwatch report`: a run's capacity report from a loadwatch (--url) or a Prometheus server
/// (--prometheus), as a table, markdown, JSON or one self-contained HTML file.
int run_report_cli(int argc, char** argv);

}  // namespace loadwatch::report
