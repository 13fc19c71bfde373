#include "onboarding/run_log.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>
#include <utility>

namespace tcl::onboarding {

RunLog::RunLog(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string_view line(text.data() + begin, end - begin);
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos || line[0] == '#') continue;
    runs_[std::string(line.substr(0, tab))] = std::string(line.substr(tab + 1));
  }
  complete_bytes_ = begin;
  torn_ = begin < text.size();
}

const std::string* RunLog::find(const std::string& key) const {
  const auto it = runs_.find(key);
  return it == runs_.end() ? nullptr : &it->second;
}

Status RunLog::add(const std::string& key, const std::string& values) {
  if (key.empty() || key.find_first_of("\t\r\n") != std::string::npos ||
      values.find_first_of("\r\n") != std::string::npos) {
    return Status::invalid_argument("run log: a key without tabs and line breaks, values on one line");
  }
  runs_[key] = values;
  if (torn_) {  // the torn line of a killed run would run into this one
    std::error_code ec;
    std::filesystem::resize_file(path_, complete_bytes_, ec);
    if (ec) return Status::internal("run log " + path_ + ": cannot cut its torn last line: " + ec.message());
    torn_ = false;
  }
  const std::string line = key + "\t" + values + "\n";
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (!f) return Status::internal("run log " + path_ + ": cannot open for appending");
  const bool written = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  if (std::fclose(f) != 0 || !written) return Status::internal("run log " + path_ + ": cannot append");
  complete_bytes_ += line.size();
  return Status::ok();
}

}  // namespace tcl::onboarding
