// The offline tuner: searches the tunable parameters a kernel declares, with far fewer
// evaluations than an exhaustive sweep.
//
// A parameter is declared on a #define line of the candidate (or of its sibling program file):
//
//   #define TILE 32  // kforge:tune [16, 32, 64, 128]
//
// The value on the line is the starting point; the list is the search space. The search is
// coordinate descent: starting from the declared values, it tries every value of one
// parameter with the others fixed, keeps the best, moves to the next parameter, and repeats
// passes until a pass improves nothing (at most three passes). Configurations that fail
// (compile error, wrong output) count as evaluated and are skipped.
//
// The minimum of single noisy measurements favours the luckiest configuration, not the fastest
// (the winner's curse): the search's result is only a short list. The loop re-times the
// fastest few with a confirmation (kforge/eval.h) and picks by confirmed ratio (PickConfirmed).
#ifndef KFORGE_AGENT_TUNER_H_
#define KFORGE_AGENT_TUNER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/eval.h"
#include "kforge/status.h"

namespace kforge {

struct TunableParam {
  std::string name;
  std::string start;                // the value on the #define line
  std::vector<std::string> values;  // the declared space (contains start)
};

using TuneConfig = std::map<std::string, std::string>;

// Finds every kforge:tune line in `sources` (in order, names unique). A malformed annotation
// is an error naming the line.
Result<std::vector<TunableParam>> FindTunables(const std::vector<std::string>& sources);

// Rewrites the #define lines of the parameters in `config`; other text is unchanged.
std::string ApplyTuneConfig(const std::string& source, const TuneConfig& config);

class CoordinateSearch {
 public:
  explicit CoordinateSearch(std::vector<TunableParam> params, int max_passes = 3);

  // The next configuration to evaluate, or nullopt when the search is over.
  std::optional<TuneConfig> Next();
  // The result of evaluating `config`: its time, or nullopt when it was not correct.
  void Report(const TuneConfig& config, std::optional<double> ms);
  // Marks a configuration as already evaluated (used when resuming a run).
  void Restore(const TuneConfig& config, std::optional<double> ms) { Report(config, ms); }

  const TuneConfig& best() const { return best_; }
  std::optional<double> best_ms() const { return best_ms_; }
  int evaluations() const { return static_cast<int>(results_.size()); }
  // Product of the value counts: what an exhaustive sweep would evaluate.
  double space_size() const;

 private:
  void Advance();

  std::vector<TunableParam> params_;
  int max_passes_;
  int pass_ = 0;
  size_t param_ = 0;
  size_t value_ = 0;
  bool improved_in_pass_ = false;
  bool started_ = false;
  bool done_ = false;
  TuneConfig best_;
  std::optional<double> best_ms_;
  std::map<TuneConfig, std::optional<double>> results_;
};

// The confirmed pick among the subjects of `times`: the highest confirmed ratio over subject
// `reference` (the seed; without one, the fastest single measurement, whose ratio over itself
// is 1), leaving out subject `exclude` (the seed; -1 for none); ties go to the lower index.
// -1 when no subject is left.
int PickConfirmed(const InterleavedTimes& times, size_t reference, int exclude);

}  // namespace kforge

#endif  // KFORGE_AGENT_TUNER_H_
