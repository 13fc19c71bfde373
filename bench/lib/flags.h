// bench/lib/flags.h — the benches' one argument parser, on
// Boost.Program_options (as daemon/config.cc): each bench declares its flags
// and they are read the same way everywhere. `--name VALUE` (or
// `--name=VALUE`) and switches without a value; flags are matched whole (no
// abbreviations); an unknown flag, a missing value or one that does not
// parse as the flag's type is an error naming the flag. A flag not given
// leaves its variable as it was (the bench's default).
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tcl::bench {

// "a,b,c" → {"a", "b", "c"} ("" → {}).
inline std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

class Flags {
 public:
  // --name VALUE into *out.
  template <class T>
  Flags& value(const char* name, T* out) {
    desc_.add_options()(name, boost::program_options::value<T>(out));
    return *this;
  }
  // --name (no value): *out = whether it was given.
  Flags& flag(const char* name, bool* out) {
    desc_.add_options()(name, boost::program_options::bool_switch(out));
    return *this;
  }
  // --name VALUE handed to `read`, which prints why and returns false for a bad value.
  Flags& custom(const char* name, std::function<bool(const std::string&)> read) {
    desc_.add_options()(name, boost::program_options::value<std::string>());
    customs_.emplace_back(name, std::move(read));
    return *this;
  }
  // --name A,B,C into *out (replacing its default).
  Flags& list(const char* name, std::vector<std::string>* out) {
    return custom(name, [out](const std::string& v) {
      *out = split_list(v);
      return true;
    });
  }
  Flags& list(const char* name, std::vector<double>* out) {
    return custom(name, [name, out](const std::string& v) {
      out->clear();
      for (const std::string& x : split_list(v)) {
        std::size_t end = 0;
        try {
          out->push_back(std::stod(x, &end));
        } catch (const std::exception&) {
          end = 0;
        }
        if (end == 0 || end != x.size()) {
          std::fprintf(stderr, "--%s takes numbers separated by commas, not '%s'\n", name, v.c_str());
          return false;
        }
      }
      return true;
    });
  }
  // The first `count` arguments that are not flags into *out, in order (-1: any number).
  Flags& positional(const char* name, std::vector<std::string>* out, int count = -1) {
    desc_.add_options()(name, boost::program_options::value<std::vector<std::string>>(out));
    positional_.add(name, count);
    return *this;
  }

  // False, with the reason on stderr, when the command line does not fit.
  bool parse(int argc, char** argv) {
    namespace po = boost::program_options;
    try {
      po::variables_map& vm = vm_;
      po::store(po::command_line_parser(argc, argv)
                    .options(desc_)
                    .positional(positional_)
                    .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
                    .run(),
                vm);
      po::notify(vm);
      for (const auto& [name, read] : customs_) {
        if (vm.count(name) && !read(vm[name].as<std::string>())) return false;
      }
      return true;
    } catch (const po::error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return false;
    }
  }

  // The flags given on the command line, as "--name", after parse().
  std::set<std::string> given() const {
    std::set<std::string> out;
    for (const auto& [name, v] : vm_) {
      if (!v.defaulted()) out.insert("--" + name);
    }
    return out;
  }

 private:
  boost::program_options::variables_map vm_;
  boost::program_options::options_description desc_;
  boost::program_options::positional_options_description positional_;
  std::vector<std::pair<std::string, std::function<bool(const std::string&)>>> customs_;
};

}  // namespace tcl::bench
