// measure/source_writer.h — generated source text, one line at a time, with
// the indentation of the blocks it opens and closes. Both code generators
// (codegen_cpu, codegen_cuda) write through it. Not thread-safe.
#pragma once

#include <sstream>
#include <string>

namespace tcl::measure {

class SourceWriter {
 public:
  void line(const std::string& s) { out_ << std::string(2 * depth_, ' ') << s << '\n'; }
  // `s` ends a line that opens a block ("for (...) {"); the next lines are indented.
  void open_block(const std::string& s) {
    line(s);
    ++depth_;
  }
  // Closes `n` blocks.
  void close(int n = 1) {
    for (int i = 0; i < n; ++i) {
      --depth_;
      line("}");
    }
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int depth_ = 0;
};

}  // namespace tcl::measure
