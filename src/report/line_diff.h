// A line diff of two texts (a candidate and the attempt it was derived from), for the run
// report: the longest common subsequence of their lines, shown as hunks with context like
// `diff -u`.
//
// Thread-safety: free functions without shared state.
#ifndef KFORGE_REPORT_LINE_DIFF_H_
#define KFORGE_REPORT_LINE_DIFF_H_

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

struct DiffLine {
  char op;           // ' ' in both, '-' only in the old text, '+' only in the new one
  std::string text;  // the line without its newline
};

// Every line of `before` and `after` in order, each marked. Lines common to both ends are
// matched first; the rest by a longest common subsequence, which costs their product in time
// and 4 bytes each of memory: above `max_cells` (old lines x new lines, after the common ends) the
// middle is shown as removed then added instead.
std::vector<DiffLine> LineDiff(std::string_view before, std::string_view after,
                               size_t max_cells = 16'000'000);

struct DiffHunk {
  int old_start = 0, old_count = 0, new_start = 0, new_count = 0;  // 1-based, as `diff -u`
  std::vector<DiffLine> lines;
};

// The changed lines of `diff` with `context` unchanged lines around each; hunks closer than
// 2 x context merge. Empty when nothing changed.
std::vector<DiffHunk> Hunks(const std::vector<DiffLine>& diff, int context = 3);

// Lines added and removed.
struct DiffStat {
  int added = 0, removed = 0;
};
DiffStat CountChanges(const std::vector<DiffLine>& diff);

}  // namespace kforge

#endif  // KFORGE_REPORT_LINE_DIFF_H_
