#pragma once
// spdlog for the daemon's messages, formatting through the shared libfmt.
//
// spdlog formats a message with fmt::detail::vformat_to<char>, fmt's whole formatting engine
// (integers, floats, specs). libfmt holds it (explicitly instantiated there), but fmt 9's
// header does not say so, so every file that logged with arguments compiled the engine again:
// about 5 s of CPU a file at -O2 -g (docs/development.md, "How long the suite takes"). The
// declaration below makes those files call libfmt's copy. Only for fmt 9's signature.

#include <spdlog/spdlog.h>

#if defined(SPDLOG_FMT_EXTERNAL) && !defined(FMT_HEADER_ONLY) && FMT_VERSION >= 90000 && \
    FMT_VERSION < 100000
FMT_BEGIN_NAMESPACE
FMT_BEGIN_DETAIL_NAMESPACE
extern template FMT_API void vformat_to(buffer<char>&, string_view,
                                        basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
FMT_END_DETAIL_NAMESPACE
FMT_END_NAMESPACE
#endif
