#include "agent/tuner.h"

#include <regex>
#include <sstream>

namespace kforge {

namespace {

const std::regex& TuneLine() {
  static const std::regex re(R"(^\s*#\s*define\s+(\w+)\s+(\S+)\s*//\s*kforge:tune\s*\[([^\]]*)\]\s*$)");
  return re;
}

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

}  // namespace

Result<std::vector<TunableParam>> FindTunables(const std::vector<std::string>& sources) {
  std::vector<TunableParam> params;
  std::set<std::string> names;
  for (const std::string& source : sources) {
    std::istringstream in(source);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.find("kforge:tune") == std::string::npos) continue;
      std::smatch m;
      if (!std::regex_match(line, m, TuneLine()))
        return Status::InvalidArgument("line " + std::to_string(number) + ": malformed kforge:tune annotation; expected `#define NAME VALUE  // kforge:tune [v1, v2, ...]`");
      TunableParam p{m[1], m[2], SplitList(m[3])};
      if (p.values.empty()) return Status::InvalidArgument("line " + std::to_string(number) + ": kforge:tune list for " + p.name + " is empty");
      if (std::find(p.values.begin(), p.values.end(), p.start) == p.values.end()) p.values.insert(p.values.begin(), p.start);
      if (!names.insert(p.name).second) return Status::InvalidArgument("line " + std::to_string(number) + ": tunable " + p.name + " is declared twice");
      params.push_back(std::move(p));
    }
  }
  return params;
}

std::string ApplyTuneConfig(const std::string& source, const TuneConfig& config) {
  std::istringstream in(source);
  std::string line, out;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.find("kforge:tune") != std::string::npos && std::regex_match(line, m, TuneLine())) {
      auto it = config.find(m[1]);
      if (it != config.end())
        line = m.prefix().str() + "#define " + m[1].str() + " " + it->second + "  // kforge:tune [" + m[3].str() + "]";
    }
    out += line + "\n";
  }
  return out;
}

CoordinateSearch::CoordinateSearch(std::vector<TunableParam> params, int max_passes)
    : params_(std::move(params)), max_passes_(max_passes) {
  for (const TunableParam& p : params_) best_[p.name] = p.start;
  if (params_.empty()) done_ = false;
}

double CoordinateSearch::space_size() const {
  double n = 1;
  for (const TunableParam& p : params_) n *= static_cast<double>(p.values.size());
  return n;
}

void CoordinateSearch::Report(const TuneConfig& config, std::optional<double> ms) {
  results_[config] = ms;
  if (ms && (!best_ms_ || *ms < *best_ms_)) {
    if (best_ms_ && config != best_) improved_in_pass_ = true;
    best_ms_ = ms;
    best_ = config;
  }
}

void CoordinateSearch::Advance() {
  if (++value_ < params_[param_].values.size()) return;
  value_ = 0;
  if (++param_ < params_.size()) return;
  param_ = 0;
  ++pass_;
  if (!improved_in_pass_ || pass_ >= max_passes_) done_ = true;
  improved_in_pass_ = false;
}

std::optional<TuneConfig> CoordinateSearch::Next() {
  if (!started_) {
    started_ = true;
    if (!results_.count(best_)) return best_;  // the declared starting point first
  }
  while (!done_ && !params_.empty()) {
    TuneConfig c = best_;
    c[params_[param_].name] = params_[param_].values[value_];
    Advance();
    if (!results_.count(c)) return c;
  }
  return std::nullopt;
}

int PickConfirmed(const InterleavedTimes& times, size_t reference, int exclude) {
  int pick = -1;
  double best = 0;
  for (size_t i = 0; i < times.labels.size(); ++i) {
    if (static_cast<int>(i) == exclude) continue;
    double r = times.Compare(i, reference).ratio;
    if (pick < 0 || r > best) {
      pick = static_cast<int>(i);
      best = r;
    }
  }
  return pick;
}

}  // namespace kforge
