#include "web/http_message.h"

#include "web/query_string.h"

namespace loadwatch {

std::string HttpRequest::query_param(const std::string& name) const {
  auto values = query_values(query, name, 1);
  return values.empty() ? "" : values.front();
}

std::vector<std::string> HttpRequest::query_params(const std::string& name) const {
  return query_values(query, name, 32);
}

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

}  // namespace loadwatch
