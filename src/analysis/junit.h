#pragma once
// A comparison as JUnit XML, the report format CI servers (Jenkins, GitLab, GitHub actions)
// display: one testcase per phase and rule; a regression is a <failure>, a figure or phase that
// is missing an <error>.

#include <string>

#include "analysis/compare.h"

namespace loadwatch::analysis {

std::string junit_xml(const Comparison& comparison, const std::string& suite_name);

}  // namespace loadwatch::analysis
