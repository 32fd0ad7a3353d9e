#pragma once
// GET /api/v1/runs/{id}/report (?format=json|table|markdown|timeline) and
// GET /api/v1/runs/{id}/report.html (?baseline=ID): a run's capacity report.

#include "report/report_service.h"
#include "routes/run_routes.h"

namespace loadwatch::report {

/// The handler add_run_routes calls for a run's subresources. `service` and `book` must
/// outlive the server.
RunSubresource report_subresource(const ReportService& service, const RunBook& book);

}  // namespace loadwatch::report
