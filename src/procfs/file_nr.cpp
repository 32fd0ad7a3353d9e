#include "procfs/file_nr.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

FileNr parse_file_nr(std::string_view text) {
  std::string_view line = next_line(text);
  FileNr f;
  f.allocated = to_u64(next_field(line), "allocated");
  f.unused = to_u64(next_field(line), "unused");
  f.maximum = to_u64(next_field(line), "maximum");
  return f;
}

}  // namespace loadwatch
