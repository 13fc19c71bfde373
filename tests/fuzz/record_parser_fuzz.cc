// libFuzzer target for the record parser and the streaming byte helpers:
// any input must parse or fail with a Status — never crash, hang or leak —
// and a record that parses must survive write → parse unchanged.
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTCL_FUZZ=ON -DTCL_BUILD_TESTS=OFF \
//         -DTCL_BUILD_TRAINER=OFF && ninja -C build-fuzz record_parser_fuzz
//   build-fuzz/tests/fuzz/record_parser_fuzz -max_total_time=60 tests/fuzz/corpus
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/byte_stream.h"
#include "core/features.h"
#include "core/program_id.h"
#include "core/record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tcl::core::RecordParser parser;
  static tcl::core::Record record;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  tcl::core::LineSplitter lines(4096, [&](std::string_view line, std::uint64_t, bool too_long) {
    if (too_long) return;
    if (!parser.parse(line, &record).is_ok()) return;
    (void)tcl::core::program_id(record);
    std::vector<float> tokens(static_cast<std::size_t>(tcl::core::kDefaultMaxSteps) * tcl::core::kTokenDim);
    tcl::core::encode_tokens(record.steps, tcl::core::kDefaultMaxSteps, tokens.data());
    const std::string written = tcl::core::write_record(record);
    tcl::core::Record again;
    tcl::core::RecordParser second;
    if (!second.parse(written, &again).is_ok() || !(again == record)) std::abort();
  });
  lines.feed(input);
  lines.finish();

  tcl::core::GzipInflater inflater;
  (void)inflater.feed(input, [](std::string_view) {});
  return 0;
}
