// core/record_internal.h — shared by record.cc (DOM parser, writer) and
// record_sax.cc (fast SAX parser). Not part of core's public API.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/record.h"

namespace tcl::core::internal {

// Number of fields of a known step kind, tag included (0 for kUnknown).
std::size_t step_arity(StepKind kind);

// Sets every field of *s to its default, keeping vector/string capacity.
void reset_step(Step* s, StepKind kind);

// The parser behind RecordParser: a Boost.JSON basic_parser (SAX) that fills
// a Record directly, without building a DOM, converting doubles exactly.
// kOk: *out holds the record. kRejected: *reason says why (a rule only this
// parser checks, e.g. duplicate keys). kAskDom: the line is not a valid
// record; the DOM parser (record.cc) finds and words the reason. The two
// agree on every verdict (tested over all data and random mutations).
// Not thread-safe.
class SaxRecordParser {
 public:
  enum class Verdict { kOk, kRejected, kAskDom };
  SaxRecordParser();
  ~SaxRecordParser();
  SaxRecordParser(const SaxRecordParser&) = delete;
  SaxRecordParser& operator=(const SaxRecordParser&) = delete;
  Verdict parse(std::string_view line, Record* out, std::string* reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcl::core::internal
