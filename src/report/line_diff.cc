#include "report/line_diff.h"

#include <cstdint>
#include <algorithm>

namespace kforge {

namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

using Lines = std::vector<std::string_view>;

// LCS of a[a0, a1) and b[b0, b1) by the textbook table of suffix lengths, walked from the top
// left: a candidate is a few hundred lines, so the table is small.
void LcsDiff(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0, size_t b1,
             std::vector<DiffLine>* out) {
  const size_t n = a1 - a0, m = b1 - b0;
  std::vector<uint32_t> table((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return table[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      out->push_back({' ', std::string(a[a0 + i])});
      ++i, ++j;
    } else if (i < n &&
               (j == m || at(i + 1, j) >= at(i, j + 1))) {  // on a tie removals first, as diff -u
      out->push_back({'-', std::string(a[a0 + i++])});
    } else {
      out->push_back({'+', std::string(b[b0 + j++])});
    }
  }
}

}  // namespace

std::vector<DiffLine> LineDiff(std::string_view before, std::string_view after, size_t max_cells) {
  const Lines a = SplitLines(before), b = SplitLines(after);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  std::vector<DiffLine> out;
  for (size_t i = 0; i < head; ++i) out.push_back({' ', std::string(a[i])});
  const size_t a1 = a.size() - tail, b1 = b.size() - tail;
  if ((a1 - head) * (b1 - head) <= max_cells) {
    LcsDiff(a, head, a1, b, head, b1, &out);
  } else {
    for (size_t i = head; i < a1; ++i) out.push_back({'-', std::string(a[i])});
    for (size_t j = head; j < b1; ++j) out.push_back({'+', std::string(b[j])});
  }
  for (size_t i = a1; i < a.size(); ++i) out.push_back({' ', std::string(a[i])});
  return out;
}

std::vector<DiffHunk> Hunks(const std::vector<DiffLine>& diff, int context) {
  std::vector<DiffHunk> hunks;
  const int n = static_cast<int>(diff.size());
  // old/new line numbers before each diff line, 1-based.
  std::vector<int> old_no(n + 1, 1), new_no(n + 1, 1);
  for (int k = 0; k < n; ++k) {
    old_no[k + 1] = old_no[k] + (diff[k].op != '+');
    new_no[k + 1] = new_no[k] + (diff[k].op != '-');
  }
  int k = 0;
  while (k < n) {
    while (k < n && diff[k].op == ' ') ++k;
    if (k == n) break;
    int begin = std::max(0, k - context), end = k;
    // Extend over changes and over gaps short enough that their contexts would touch.
    for (int gap = 0; end < n; ++end) {
      gap = diff[end].op == ' ' ? gap + 1 : 0;
      if (gap > 2 * context) {
        end += 1 + context - gap;
        break;
      }  // keep `context` of the gap
    }
    end = std::min(end, n);
    if (end == n) {  // trailing context: at most `context` unchanged lines
      int trailing = 0;
      while (trailing < end - k && diff[end - 1 - trailing].op == ' ') ++trailing;
      end -= std::max(0, trailing - context);
    }
    DiffHunk h;
    h.old_start = old_no[begin];
    h.new_start = new_no[begin];
    for (int x = begin; x < end; ++x) {
      h.lines.push_back(diff[x]);
      h.old_count += diff[x].op != '+';
      h.new_count += diff[x].op != '-';
    }
    hunks.push_back(std::move(h));
    k = end;
  }
  return hunks;
}

DiffStat CountChanges(const std::vector<DiffLine>& diff) {
  DiffStat s;
  for (const DiffLine& d : diff) {
    s.added += d.op == '+';
    s.removed += d.op == '-';
  }
  return s;
}

}  // namespace kforge
