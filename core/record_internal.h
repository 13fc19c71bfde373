// core/record_internal.h — shared by record.cc (DOM parser, writer) and
// record_sax.cc (fast SAX parser). Not part of core's public API.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "core/record.h"

namespace tcl::core::internal {

// Number of fields of a known step kind, tag included (0 for kUnknown).
std::size_t step_arity(StepKind kind);

// Sets every field of *s to its default, keeping vector/string capacity.
void reset_step(Step* s, StepKind kind);

// The fast path of RecordParser: a Boost.JSON basic_parser (SAX) that fills a
// Record directly, without building a DOM. It is deliberately stricter than
// the DOM parser: it accepts only plain, valid records (no unknown step kinds,
// no non-empty stages, no duplicate keys) and returns false for anything
// else, leaving the verdict and the error message to the DOM parser. When it
// returns true, *out equals what the DOM parser produces (tested over all data).
// Not thread-safe.
class SaxRecordParser {
 public:
  SaxRecordParser();
  ~SaxRecordParser();
  SaxRecordParser(const SaxRecordParser&) = delete;
  SaxRecordParser& operator=(const SaxRecordParser&) = delete;
  bool parse(std::string_view line, Record* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcl::core::internal
