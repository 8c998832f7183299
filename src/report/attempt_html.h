// One attempt of a run as an HTML section of the run report (run_report.h): the verdict (the
// failing trial and its first mismatches, compiler errors, gates, confirmations), the
// analyst's recommendations, the source, the diff from the attempt it came from, and each model
// call with its prompt and answer collapsed.
//
// Thread-safety: free functions without shared state.
#ifndef KFORGE_REPORT_ATTEMPT_HTML_H_
#define KFORGE_REPORT_ATTEMPT_HTML_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace kforge {

// What the section shows besides the attempt itself.
struct AttemptContext {
  const AttemptRow* base = nullptr;  // the attempt the diff is against (DiffBase); null: none
  bool base_is_parent = false;       // base is the recorded parent, not the one before
  bool best = false;                 // the run's best: its section starts open
  std::string backend;               // the run's: picks the source's highlighting
  std::vector<const LlmCallRow*> calls;
  std::vector<const RecommendationRow*> recommendations;
};

// <details class="attempt" id="attempt-N">...</details>, every string escaped.
std::string AttemptSection(const AttemptRow& attempt, const AttemptContext& context);

// The verdict as markup: status and message, gate, warnings, compiler output, the first failing
// trial with its outputs' errors and first mismatches, timing, precision rule, confirmations.
// `verdict` may be anything the store held (null or text when unparsed).
std::string VerdictHtml(const nlohmann::json& verdict);

// The line diff of `before` to `after` as <pre class="diff"> hunks, or a note when equal.
std::string DiffHtml(const std::string& before, const std::string& after);

// "cpp", "python" or "plaintext": the highlight.js language of a candidate source, from the
// backend and the text (the store keeps no file name; CUDA and OpenCL read well as C++).
std::string SourceLanguage(const std::string& source, const std::string& backend);

}  // namespace kforge

#endif  // KFORGE_REPORT_ATTEMPT_HTML_H_
