#include "core/program_id.h"

#include "core/sha256.h"

namespace tcl::core {

std::string canonical_workload_key(std::string_view workload_key) {
  std::string out;
  out.reserve(workload_key.size());
  bool in_string = false;
  bool escaped = false;
  for (char c : workload_key) {
    if (in_string) {
      out.push_back(c);
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '"') in_string = true;
    out.push_back(c);
  }
  return out;
}

void canonical_program(std::string_view workload_key, std::span<const Step> steps, std::string* out) {
  out->append("tcl-program-v1\n");
  out->append(canonical_workload_key(workload_key));
  out->push_back('\n');
  write_steps(steps, out);
}

std::string program_id(std::string_view workload_key, std::span<const Step> steps) {
  std::string text;
  text.reserve(64 + workload_key.size() + 40 * steps.size());
  canonical_program(workload_key, steps, &text);
  return sha256_hex(text);
}

std::string program_id(const Record& r) { return program_id(r.workload_key, r.steps); }

}  // namespace tcl::core
